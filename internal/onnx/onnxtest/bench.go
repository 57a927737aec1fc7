package onnxtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/onnx/onnxgraph"
)

// BenchDir is where benchmark models and texts are written: $MEMORY_BENCH_DIR, else
// os.UserCacheDir()/memory/bench (never the repository).
func BenchDir(tb testing.TB) string {
	tb.Helper()
	d := os.Getenv("MEMORY_BENCH_DIR")
	if d == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		d = filepath.Join(c, "memory", "bench")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		tb.Fatal(err)
	}
	return d
}

// MiniLMModels writes (once) two model folders shaped like all-MiniLM-L6-v2 and
// ms-marco-MiniLM-L-6-v2 (6 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522)
// with random weights and the real tokenizers, and returns their paths.
func MiniLMModels(tb testing.TB) (encoder, crossEncoder string) {
	tb.Helper()
	shared := ModelsDir(tb)
	root := BenchDir(tb)
	encoder = filepath.Join(root, "minilm-random-encoder")
	crossEncoder = filepath.Join(root, "minilm-random-cross-encoder")
	write := func(dir string, classifier bool, tokSrc string, files []string, extra map[string]string) {
		stampPath := filepath.Join(dir, ".graph-version")
		const version = "onnxgraph-bert-v1 seed 20261122"
		if b, err := os.ReadFile(stampPath); err == nil && string(b) == version {
			return
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(tokSrc, f))
			if err != nil {
				Missing(tb, "tokenizer file %v", err)
			}
			writeFile(tb, filepath.Join(dir, f), data)
		}
		for name, content := range extra {
			writeFile(tb, filepath.Join(dir, name), []byte(content))
		}
		writeFile(tb, filepath.Join(dir, "onnx", "model.onnx"), onnxgraph.BERT(onnxgraph.MiniLM(classifier)).Marshal())
		writeFile(tb, stampPath, []byte(version))
	}
	write(encoder, false, filepath.Join(shared, "all-MiniLM-L6-v2"),
		[]string{"tokenizer.json", "vocab.txt", "config.json", "tokenizer_config.json", "special_tokens_map.json",
			"sentence_bert_config.json", "modules.json", "1_Pooling/config.json"}, nil)
	write(crossEncoder, true, filepath.Join(shared, "ms-marco-MiniLM-L-6-v2"),
		[]string{"tokenizer.json", "vocab.txt"}, map[string]string{
			"config.json": `{"architectures":["BertForSequenceClassification"],"model_type":"bert","hidden_size":384,` +
				`"num_hidden_layers":6,"num_attention_heads":12,"intermediate_size":1536,"vocab_size":30522,` +
				`"max_position_embeddings":512,"type_vocab_size":2,"num_labels":1,"id2label":{"0":"LABEL_0"},"label2id":{"LABEL_0":0}}`,
			"tokenizer_config.json": `{"tokenizer_class":"BertTokenizer","do_lower_case":true,"model_max_length":512,` +
				`"cls_token":"[CLS]","sep_token":"[SEP]","pad_token":"[PAD]","unk_token":"[UNK]","mask_token":"[MASK]"}`,
		})
	return encoder, crossEncoder
}

func writeFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, data, atomicfile.Options{}); err != nil {
		tb.Fatal(err)
	}
}

// BenchTexts returns n passages (title and the first words of the abstract, at most
// maxWords words) from the SciFact corpus, and a query, and writes them to
// BenchDir/texts.json so that a peer benchmark can read the same inputs.
func BenchTexts(tb testing.TB, n, maxWords int) (query string, texts []string) {
	tb.Helper()
	shared := ModelsDir(tb)
	path := filepath.Join(shared, "..", "data", "beir", "scifact", "corpus.jsonl")
	f, err := os.Open(path)
	if err != nil {
		Missing(tb, "SciFact corpus %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() && len(texts) < n {
		var doc struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			tb.Fatal(err)
		}
		words := strings.Fields(doc.Title + ". " + doc.Text)
		if len(words) > maxWords {
			words = words[:maxWords]
		}
		texts = append(texts, strings.Join(words, " "))
	}
	if len(texts) < n {
		tb.Fatalf("only %d texts in %s", len(texts), path)
	}
	query = "What are the effects of diffusion tensor imaging on newborn white matter development?"
	data, _ := json.Marshal(map[string]any{"query": query, "texts": texts})
	writeFile(tb, filepath.Join(BenchDir(tb), fmt.Sprintf("texts-%d-%d.json", n, maxWords)), data)
	return query, texts
}
