// Command genpdf writes the PDF fixtures of package textextract's tests with a real PDF
// producer (github.com/go-pdf/fpdf: compressed content streams, core fonts, RC4
// encryption). It is a module of its own, so the library does not depend on fpdf. Run it
// from this folder after changing it:
//
//	go run .
//
// then update the golden files: go test ./textextract/ -run TestGolden -update
package main

import (
	"log"
	"time"

	"github.com/go-pdf/fpdf"
)

// newDoc is a document with fixed dates, so that the output is the same on every run.
func newDoc() *fpdf.Fpdf {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetCreationDate(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p.SetModificationDate(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p.SetCatalogSort(true)
	return p
}

// sample writes two pages of text: a heading, lines in two sizes, a wrapped paragraph and
// a two-column row.
func sample(p *fpdf.Fpdf) {
	p.SetTitle("Otters of the Northern Coast", true)
	p.SetAuthor("textextract tests", true)
	p.AddPage()
	p.SetFont("Helvetica", "B", 18)
	p.Cell(0, 10, "Otters of the Northern Coast")
	p.Ln(14)
	p.SetFont("Helvetica", "", 11)
	p.Cell(0, 6, "Sea otters float on their backs and crack shellfish on their chests.")
	p.Ln(8)
	p.MultiCell(120, 5, "River otters build dens in the banks of streams. They hunt fish, frogs and crayfish, "+
		"and they can hold their breath for eight minutes.", "", "L", false)
	p.Ln(4)
	p.Cell(60, 6, "Left column: kelp forests")
	p.Cell(60, 6, "Right column: rocky shores")
	p.AddPage()
	p.SetFont("Times", "I", 12)
	p.Cell(0, 8, "Page two: a census counted 3,000 otters in 2025.")
	p.Ln(10)
	p.SetFont("Courier", "", 10)
	p.Cell(0, 6, "Footnote (c) caf\xe9 au lait") // fpdf's core fonts take cp1252 bytes
}

func write(path string, build func(*fpdf.Fpdf)) {
	p := newDoc()
	build(p)
	if err := p.OutputFileAndClose(path); err != nil {
		log.Fatal(err)
	}
}

func main() {
	write("../sample.pdf", sample)
	// Encrypted with an empty user password (permissions only): readable.
	write("../protected.pdf", func(p *fpdf.Fpdf) {
		p.SetProtection(fpdf.CnProtectPrint, "", "owner")
		sample(p)
	})
	// Encrypted with a user password: ErrEncrypted.
	write("../encrypted.pdf", func(p *fpdf.Fpdf) {
		p.SetProtection(fpdf.CnProtectPrint, "secret", "owner")
		sample(p)
	})
	// Pages without text (a scanned document without a text layer): ErrNoText.
	write("../notext.pdf", func(p *fpdf.Fpdf) {
		p.AddPage()
		p.Rect(20, 20, 100, 50, "F")
		p.AddPage()
		p.Line(10, 10, 100, 100)
	})
}
