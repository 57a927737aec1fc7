// LuceneBatch: the Lucene 8 side of the batch-throughput benchmarks. It builds (once, when
// --index is empty and --corpus is given) an fs index as ../shared/tools/lucene-bm25 does
// for its flat variant — "contents" = title + " " + text as a stock TextField, an "id" string
// field and binary doc value, EnglishAnalyzer, BM25Similarity, one 256 MB RAM buffer, serial
// merges — then answers every query of a JSONL file ({"_id":..,"text":..} per line) from T
// threads — each thread takes whole queries, as a retrieval server's workers
// do — with the yardstick's query construction: EnglishAnalyzer, one SHOULD TermQuery per
// distinct term (boost = count), BM25Similarity(k1, b), top k, ids read from doc values.
// It runs warm-up rounds over the whole batch, then timed rounds, and prints one JSON line:
// seconds per batch (median, min, max) and queries/s.
//
// --latency times each query on one thread instead: --warmup rounds over --warmup-queries
// (the tuning half: the JIT compiles the search path on queries that are not timed), then a
// fresh DirectoryReader answers --rounds rounds of --queries (the reported half), round 1
// being queries this reader (and JVM) has not seen: p50, p99 and mean a round, in µs.
// --run-out FILE then writes each query's top k, searched again untimed, as a TREC run
// (query id, document id, rank, score): the run bench/lucene/overlap.py compares with ours.
//
// --store-raw stores each corpus line whole in a stored field "raw" (LZ4-compressed, as
// pyserini's -storeRaw keeps them: what a retriever that returns passages, Search-R1's BM25
// server among them, reads back), for an ingest that keeps the text as ours does.
// --force-merge N merges the index down to at most N segments after the build (or, when the
// index exists, before anything else), timed with its CPU seconds: the single-segment index
// that ours is compacted to, and that pyserini's -optimize makes.
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
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.util.BytesRef;
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
    String index = null, queries = null, corpus = null, warmupQueries = null, runOut = null;
    int threads = 2, k = 10, warmup = 3, rounds = 5, indexThreads = 1;
    boolean indexOnly = false, latency = false, storeRaw = false;
    int forceMerge = 0;
    float k1 = 0.9f, b = 0.4f;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--index": index = args[++i]; break;
        case "--queries": queries = args[++i]; break;
        case "--corpus": corpus = args[++i]; break;
        case "--threads": threads = Integer.parseInt(args[++i]); break;
        case "--k": k = Integer.parseInt(args[++i]); break;
        case "--warmup": warmup = Integer.parseInt(args[++i]); break;
        case "--rounds": rounds = Integer.parseInt(args[++i]); break;
        case "--k1": k1 = Float.parseFloat(args[++i]); break;
        case "--b": b = Float.parseFloat(args[++i]); break;
        case "--index-threads": indexThreads = Integer.parseInt(args[++i]); break;
        case "--index-only": indexOnly = true; break;
        case "--latency": latency = true; break;
        case "--warmup-queries": warmupQueries = args[++i]; break;
        case "--store-raw": storeRaw = true; break;
        case "--force-merge": forceMerge = Integer.parseInt(args[++i]); break;
        case "--run-out": runOut = args[++i]; break;
        default: throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (index == null || (queries == null && !indexOnly)) throw new IllegalArgumentException("--index and --queries are required");
    if (corpus != null) buildIfMissing(Paths.get(index), Paths.get(corpus), new BM25Similarity(k1, b), indexThreads, storeRaw);
    if (forceMerge > 0) forceMerge(Paths.get(index), new BM25Similarity(k1, b), forceMerge);
    if (indexOnly) return;
    List<String> qs = readQueries(queries);
    BooleanQuery.setMaxClauseCount(1 << 16);
    if (latency) {
      latency(index, qs, warmupQueries == null ? null : readQueries(warmupQueries), warmup, rounds, k, k1, b);
      if (runOut != null) writeRun(index, readQueryIds(queries), qs, k, k1, b, runOut);
      return;
    }
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

  /** The --latency mode (see the header). */
  static void latency(String index, List<String> qs, List<String> warm, int warmup, int rounds, int k, float k1, float b)
      throws Exception {
    Analyzer analyzer = new EnglishAnalyzer();
    long sink = 0;
    if (warm != null && warmup > 0) {
      try (DirectoryReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(index)))) {
        IndexSearcher s = new IndexSearcher(reader);
        s.setSimilarity(new BM25Similarity(k1, b));
        s.setQueryCache(null);
        for (int r = 0; r < warmup; r++) {
          for (String q : warm) for (String id : search(s, reader, analyzer, q, k)) sink += id.length();
        }
      }
    }
    StringBuilder js = new StringBuilder();
    try (DirectoryReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(index)))) {
      IndexSearcher s = new IndexSearcher(reader);
      s.setSimilarity(new BM25Similarity(k1, b));
      s.setQueryCache(null);
      for (int r = 0; r < rounds; r++) {
        long[] ns = new long[qs.size()];
        long total = 0;
        for (int i = 0; i < qs.size(); i++) {
          long t = System.nanoTime();
          for (String id : search(s, reader, analyzer, qs.get(i), k)) sink += id.length();
          ns[i] = System.nanoTime() - t;
          total += ns[i];
        }
        Arrays.sort(ns);
        double p50 = ns[ns.length / 2] / 1e3, p99 = ns[Math.min(ns.length - 1, (int) Math.ceil(ns.length * 0.99) - 1)] / 1e3;
        double mean = total / 1e3 / ns.length;
        System.err.printf(Locale.ROOT, "round %d: %d queries, k=%d, one thread: p50 %.1f µs, p99 %.1f µs, mean %.1f µs%n",
            r + 1, ns.length, k, p50, p99, mean);
        js.append(r > 0 ? "," : "").append(String.format(Locale.ROOT, "{\"p50_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f}", p50, p99, mean));
      }
      System.out.printf(Locale.ROOT, "{\"docs\":%d,\"queries\":%d,\"k\":%d,\"warmup_queries\":%d,\"warmup_rounds\":%d,\"rounds\":[%s],\"sink\":%d}%n",
          reader.numDocs(), qs.size(), k, warm == null ? 0 : warm.size(), warmup, js, sink);
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
    TopDocs td = s.search(bagOfWords(a, text), k);
    ScoreDoc[] sd = td.scoreDocs;
    int[] docs = new int[sd.length];
    for (int i = 0; i < sd.length; i++) docs[i] = sd[i].doc;
    Arrays.sort(docs);
    String[] ids = new String[docs.length];
    List<LeafReaderContext> leaves = reader.leaves();
    for (int i = 0; i < docs.length; i++) ids[i] = idOf(leaves, docs[i]);
    return ids;
  }

  /** The "id" doc value of document doc ("" when it has none). */
  static String idOf(List<LeafReaderContext> leaves, int doc) throws IOException {
    LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(doc, leaves));
    BinaryDocValues dv = leaf.reader().getBinaryDocValues("id");
    return dv != null && dv.advanceExact(doc - leaf.docBase) ? dv.binaryValue().utf8ToString() : "";
  }

  /** The yardstick's query: one SHOULD TermQuery per distinct analyzed term, boost = count. */
  static Query bagOfWords(Analyzer a, String text) throws IOException {
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
    return bq.build();
  }

  /**
   * Indexes the corpus into dir unless dir already holds an index, with threads indexing
   * threads sharing one IndexWriter (thread-safe; merges run in the thread that triggers
   * them, SerialMergeScheduler), and prints the docs/s and the JVM's CPU seconds.
   */
  static void buildIfMissing(java.nio.file.Path dir, java.nio.file.Path corpus, BM25Similarity sim, int threads, boolean storeRaw) throws IOException {
    Files.createDirectories(dir);
    try (FSDirectory d = FSDirectory.open(dir)) {
      if (DirectoryReader.indexExists(d)) return;
      long t = System.nanoTime();
      long cpu0 = processCpuNanos();
      IndexWriterConfig cfg = writerConfig(sim, IndexWriterConfig.OpenMode.CREATE);
      cfg.setRAMBufferSizeMB(256);
      AtomicLong n = new AtomicLong();
      try (IndexWriter w = new IndexWriter(d, cfg);
           java.io.BufferedReader r = Files.newBufferedReader(corpus, StandardCharsets.UTF_8)) {
        Thread[] ts = new Thread[threads];
        IOException[] fail = new IOException[1];
        for (int i = 0; i < threads; i++) {
          ts[i] = new Thread(() -> {
            try {
              while (true) {
                String line;
                synchronized (r) { line = r.readLine(); }
                if (line == null) return;
                Map<String, String> f = parseFlat(line);
                if (f.get("_id") == null) continue;
                Document doc = new Document();
                doc.add(new StringField("id", f.get("_id"), Field.Store.YES));
                doc.add(new BinaryDocValuesField("id", new BytesRef(f.get("_id"))));
                doc.add(new TextField("contents", f.getOrDefault("title", "") + " " + f.getOrDefault("text", ""), Field.Store.NO));
                if (storeRaw) doc.add(new StoredField("raw", line));
                w.addDocument(doc);
                n.incrementAndGet();
              }
            } catch (IOException e) {
              synchronized (fail) { fail[0] = e; }
            }
          });
          ts[i].start();
        }
        for (Thread th : ts) {
          try { th.join(); } catch (InterruptedException e) { throw new IOException(e); }
        }
        if (fail[0] != null) throw fail[0];
        w.commit();
      }
      double secs = (System.nanoTime() - t) / 1e9;
      System.err.printf(Locale.ROOT, "indexed %d docs in %.1f s (%.0f docs/s) with %d indexing threads, %.1f CPU-s%s%n",
          n.get(), secs, n.get() / secs, threads, (processCpuNanos() - cpu0) / 1e9, storeRaw ? ", raw lines stored" : "");
    }
  }

  /** The writer's settings of both the build and the force merge: EnglishAnalyzer, sim, serial merges. */
  static IndexWriterConfig writerConfig(BM25Similarity sim, IndexWriterConfig.OpenMode mode) {
    IndexWriterConfig cfg = new IndexWriterConfig(new EnglishAnalyzer());
    cfg.setOpenMode(mode);
    cfg.setSimilarity(sim);
    cfg.setMergeScheduler(new SerialMergeScheduler());
    return cfg;
  }

  /** Merges the index in dir down to at most n segments (nothing when it has no more). */
  static void forceMerge(java.nio.file.Path dir, BM25Similarity sim, int n) throws IOException {
    try (FSDirectory d = FSDirectory.open(dir)) {
      int before;
      try (DirectoryReader r = DirectoryReader.open(d)) {
        before = r.leaves().size();
      }
      if (before <= n) {
        System.err.printf(Locale.ROOT, "force merge: %d segments already (<= %d)%n", before, n);
        return;
      }
      long t = System.nanoTime();
      long cpu0 = processCpuNanos();
      try (IndexWriter w = new IndexWriter(d, writerConfig(sim, IndexWriterConfig.OpenMode.APPEND))) {
        w.forceMerge(n);
        w.commit();
      }
      System.err.printf(Locale.ROOT, "force merge: %d -> %d segments in %.1f s, %.1f CPU-s%n",
          before, n, (System.nanoTime() - t) / 1e9, (processCpuNanos() - cpu0) / 1e9);
    }
  }

  /** The JVM's CPU time so far, all threads (0 where the platform does not say). */
  static long processCpuNanos() {
    java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean) {
      return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
    }
    return 0;
  }

  /** The ids of the queries readQueries reads, in the same order. */
  static List<String> readQueryIds(String path) throws IOException {
    return readQueryField(path, "_id");
  }

  /** The --run-out file: each query's top k (the latency mode's query), best first. */
  static void writeRun(String index, List<String> ids, List<String> qs, int k, float k1, float b, String path)
      throws Exception {
    Analyzer analyzer = new EnglishAnalyzer();
    StringBuilder out = new StringBuilder();
    try (DirectoryReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(index)))) {
      IndexSearcher s = new IndexSearcher(reader);
      s.setSimilarity(new BM25Similarity(k1, b));
      s.setQueryCache(null);
      List<LeafReaderContext> leaves = reader.leaves();
      for (int i = 0; i < qs.size(); i++) {
        ScoreDoc[] sd = s.search(bagOfWords(analyzer, qs.get(i)), k).scoreDocs;
        for (int r = 0; r < sd.length; r++) {
          out.append(ids.get(i)).append(" Q0 ").append(idOf(leaves, sd[r].doc)).append(' ').append(r + 1).append(' ')
              .append(sd[r].score).append(" lucene\n");
        }
      }
    }
    Files.write(Paths.get(path), out.toString().getBytes(StandardCharsets.UTF_8));
  }

  /** The "text" string of each JSONL line. */
  static List<String> readQueries(String path) throws IOException {
    return readQueryField(path, "text");
  }

  /** Field f ("" when absent) of each JSONL line that has a "text" string. */
  static List<String> readQueryField(String path, String f) throws IOException {
    List<String> out = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
      Map<String, String> m = parseFlat(line);
      if (m.get("text") != null) out.add(m.getOrDefault(f, ""));
    }
    return out;
  }

  /** A flat JSON object whose values are strings (other values are skipped). */
  static Map<String, String> parseFlat(String s) {
    Map<String, String> out = new java.util.HashMap<>();
    int[] pos = {s.indexOf('{') + 1};
    while (true) {
      skipWs(s, pos);
      if (pos[0] >= s.length() || s.charAt(pos[0]) != '"') return out;
      String key = readString(s, pos);
      skipWs(s, pos);
      pos[0]++; // ':'
      skipWs(s, pos);
      if (s.charAt(pos[0]) == '"') out.put(key, readString(s, pos));
      else while (pos[0] < s.length() && s.charAt(pos[0]) != ',' && s.charAt(pos[0]) != '}') pos[0]++;
      skipWs(s, pos);
      if (pos[0] >= s.length() || s.charAt(pos[0]) != ',') return out;
      pos[0]++;
    }
  }

  static void skipWs(String s, int[] pos) {
    while (pos[0] < s.length() && Character.isWhitespace(s.charAt(pos[0]))) pos[0]++;
  }

  /** Reads the JSON string starting at pos (at its opening quote). */
  static String readString(String s, int[] pos) {
    int i = pos[0] + 1;
    StringBuilder sb = new StringBuilder();
    while (i < s.length() && s.charAt(i) != '"') {
      char c = s.charAt(i++);
      if (c != '\\') { sb.append(c); continue; }
      char e = s.charAt(i++);
      switch (e) {
        case 'n': sb.append('\n'); break;
        case 't': sb.append('\t'); break;
        case 'r': sb.append('\r'); break;
        case 'b': sb.append('\b'); break;
        case 'f': sb.append('\f'); break;
        case 'u': sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
        default: sb.append(e);
      }
    }
    pos[0] = i + 1;
    return sb.toString();
  }
}
