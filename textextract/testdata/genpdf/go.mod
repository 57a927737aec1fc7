module github.com/agentmem/memory/textextract/testdata/genpdf

go 1.26.0

require github.com/go-pdf/fpdf v0.9.0
