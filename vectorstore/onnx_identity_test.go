package vectorstore

import "testing"

func TestParseONNXIdentity(t *testing.T) {
	cases := []struct {
		id   string
		ok   bool
		want ONNXIdentity
	}{
		{"all-MiniLM-L6-v2@sha256:0123456789abcdef", true, ONNXIdentity{Model: "all-MiniLM-L6-v2", SHA256: "0123456789abcdef"}},
		{`e5-base-v2@sha256:0123456789abcdef+preset=e5+plen=128+passage="passage: +preset=bge"`, true,
			ONNXIdentity{Model: "e5-base-v2", SHA256: "0123456789abcdef", Preset: "e5", PassageMaxLength: 128, PassagePrefix: "passage: +preset=bge"}},
		{`x@sha256:0123456789abcdef+passage="doc: "`, true, ONNXIdentity{Model: "x", SHA256: "0123456789abcdef", PassagePrefix: "doc: "}},
		{"hash-bigram-v1/256", false, ONNXIdentity{}},
		{"model2vec:potion@sha256:01", false, ONNXIdentity{}},
		{"x@sha256:01+preset=e6", false, ONNXIdentity{}},
		{"x@sha256:01+plen=two", false, ONNXIdentity{}},
		{"x@sha256:01+color=red", false, ONNXIdentity{}},
		{`x@sha256:01+passage="unterminated`, false, ONNXIdentity{}},
	}
	for _, c := range cases {
		got, ok := ParseONNXIdentity(c.id)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseONNXIdentity(%q) = %+v, %v; want %+v, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

func TestPresetForModel(t *testing.T) {
	for name, want := range map[string]string{
		"e5-base-v2": PresetE5, "intfloat/E5-large-v2": PresetE5, "bge-base-en-v1.5": PresetBGE, "BAAI/BGE-m3": PresetBGE,
		"all-MiniLM-L6-v2": PresetNone, "tiny-bert-encoder": PresetNone, "gte-base": PresetNone,
	} {
		if got := PresetForModel(name).Name; got != want {
			t.Errorf("PresetForModel(%q) = %q, want %q", name, got, want)
		}
	}
	for _, n := range []string{"e5", "BGE", "none", "sentence-transformers"} {
		if _, err := LookupPreset(n); err != nil {
			t.Errorf("LookupPreset(%q): %v", n, err)
		}
	}
}
