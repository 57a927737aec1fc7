// LuceneTokens prints the terms Lucene 8's EnglishAnalyzer makes of each line of standard
// input (the line's JSON-escaped text is not parsed: each line is taken as is), one output
// line per input line, terms separated by single spaces. It records the goldens of
// internal/bm25's en_lucene analyzer test:
//
//   bash bench/lucene/tokens.sh < texts.txt > tokens.txt
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;

public class LuceneTokens {
  public static void main(String[] args) throws IOException {
    Analyzer a = new EnglishAnalyzer();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, false, "UTF-8");
    for (String line; (line = in.readLine()) != null; ) {
      StringBuilder b = new StringBuilder();
      try (TokenStream ts = a.tokenStream("contents", line)) {
        CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
        ts.reset();
        while (ts.incrementToken()) {
          if (b.length() > 0) b.append(' ');
          b.append(term);
        }
        ts.end();
      }
      out.println(b);
    }
    out.flush();
  }
}
