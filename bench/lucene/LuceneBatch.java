// LuceneBatch: the Lucene 8 side of the batch-throughput benchmarks. It opens an index that
// ../shared/tools/lucene-bm25 built (flat variant, fs directory: a "contents" field and an
// "id" binary doc value), and answers every query of a JSONL file ({"_id":..,"text":..} per
// line) from T threads — each thread takes whole queries, as a retrieval server's workers
// do — with the yardstick's query construction: EnglishAnalyzer, one SHOULD TermQuery per
// distinct term (boost = count), BM25Similarity(k1, b), top k, ids read from doc values.
// It runs warm-up rounds over the whole batch, then timed rounds, and prints one JSON line:
// seconds per batch (median, min, max) and queries/s.
//
// Build and run: see bench/lucene/run.sh.
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;

public final class LuceneBatch {
  public static void main(String[] args) throws Exception {
    String index = null, queries = null;
    int threads = 2, k = 10, warmup = 3, rounds = 5;
    float k1 = 0.9f, b = 0.4f;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--index": index = args[++i]; break;
        case "--queries": queries = args[++i]; break;
        case "--threads": threads = Integer.parseInt(args[++i]); break;
        case "--k": k = Integer.parseInt(args[++i]); break;
        case "--warmup": warmup = Integer.parseInt(args[++i]); break;
        case "--rounds": rounds = Integer.parseInt(args[++i]); break;
        case "--k1": k1 = Float.parseFloat(args[++i]); break;
        case "--b": b = Float.parseFloat(args[++i]); break;
        default: throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (index == null || queries == null) throw new IllegalArgumentException("--index and --queries are required");
    List<String> qs = readQueries(queries);
    BooleanQuery.setMaxClauseCount(1 << 16);
    try (DirectoryReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(index)))) {
      IndexSearcher searcher = new IndexSearcher(reader);
      searcher.setSimilarity(new BM25Similarity(k1, b));
      searcher.setQueryCache(null);
      Analyzer analyzer = new EnglishAnalyzer();
      AtomicLong sink = new AtomicLong();
      for (int r = 0; r < warmup; r++) runBatch(searcher, reader, analyzer, qs, threads, k, sink);
      double[] secs = new double[rounds];
      for (int r = 0; r < rounds; r++) {
        long t = System.nanoTime();
        runBatch(searcher, reader, analyzer, qs, threads, k, sink);
        secs[r] = (System.nanoTime() - t) / 1e9;
        System.err.printf(Locale.ROOT, "round %d: %.3f s (%.0f queries/s)%n", r + 1, secs[r], qs.size() / secs[r]);
      }
      Arrays.sort(secs);
      double med = secs[rounds / 2];
      System.out.printf(Locale.ROOT,
          "{\"docs\":%d,\"queries\":%d,\"threads\":%d,\"k\":%d,\"s_per_batch_median\":%.4f,\"s_min\":%.4f,\"s_max\":%.4f,\"queries_per_s\":%.1f,\"sink\":%d}%n",
          reader.numDocs(), qs.size(), threads, k, med, secs[0], secs[rounds - 1], qs.size() / med, sink.get());
    }
  }

  static void runBatch(IndexSearcher s, DirectoryReader reader, Analyzer a, List<String> qs, int threads, int k,
                       AtomicLong sink) throws Exception {
    AtomicInteger next = new AtomicInteger();
    Thread[] ts = new Thread[threads];
    Exception[] errs = new Exception[threads];
    for (int t = 0; t < threads; t++) {
      final int ti = t;
      ts[t] = new Thread(() -> {
        try {
          long local = 0;
          for (int i; (i = next.getAndIncrement()) < qs.size(); ) {
            for (String id : search(s, reader, a, qs.get(i), k)) local += id.length();
          }
          sink.addAndGet(local);
        } catch (Exception e) {
          errs[ti] = e;
        }
      });
      ts[t].start();
    }
    for (Thread t : ts) t.join();
    for (Exception e : errs) if (e != null) throw e;
  }

  /** One query: analyze, bag of words, top k, ids from doc values (in doc order). */
  static String[] search(IndexSearcher s, DirectoryReader reader, Analyzer a, String text, int k) throws IOException {
    LinkedHashMap<String, Integer> counts = new LinkedHashMap<>();
    try (TokenStream ts = a.tokenStream("contents", text)) {
      CharTermAttribute t = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      while (ts.incrementToken()) counts.merge(t.toString(), 1, Integer::sum);
      ts.end();
    }
    BooleanQuery.Builder bq = new BooleanQuery.Builder();
    for (Map.Entry<String, Integer> e : counts.entrySet()) {
      Query tq = new TermQuery(new Term("contents", e.getKey()));
      if (e.getValue() > 1) tq = new BoostQuery(tq, e.getValue());
      bq.add(tq, BooleanClause.Occur.SHOULD);
    }
    TopDocs td = s.search(bq.build(), k);
    ScoreDoc[] sd = td.scoreDocs;
    int[] docs = new int[sd.length];
    for (int i = 0; i < sd.length; i++) docs[i] = sd[i].doc;
    Arrays.sort(docs);
    String[] ids = new String[docs.length];
    List<LeafReaderContext> leaves = reader.leaves();
    for (int i = 0; i < docs.length; i++) {
      LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(docs[i], leaves));
      BinaryDocValues dv = leaf.reader().getBinaryDocValues("id");
      if (dv != null && dv.advanceExact(docs[i] - leaf.docBase)) ids[i] = dv.binaryValue().utf8ToString();
      else ids[i] = "";
    }
    return ids;
  }

  /** The "text" string of each JSONL line (a minimal JSON string decoder). */
  static List<String> readQueries(String path) throws IOException {
    List<String> out = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
      int i = line.indexOf("\"text\":");
      if (i < 0) continue;
      i = line.indexOf('"', i + 7) + 1;
      StringBuilder sb = new StringBuilder();
      while (i < line.length() && line.charAt(i) != '"') {
        char c = line.charAt(i++);
        if (c != '\\') { sb.append(c); continue; }
        char e = line.charAt(i++);
        switch (e) {
          case 'n': sb.append('\n'); break;
          case 't': sb.append('\t'); break;
          case 'r': sb.append('\r'); break;
          case 'b': sb.append('\b'); break;
          case 'f': sb.append('\f'); break;
          case 'u': sb.append((char) Integer.parseInt(line.substring(i, i + 4), 16)); i += 4; break;
          default: sb.append(e);
        }
      }
      out.add(sb.toString());
    }
    return out;
  }
}
