package searchr1

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRetrieveTrailingData: anything but whitespace after the request object is malformed
// JSON (400), a stray closing bracket included.
func TestRetrieveTrailingData(t *testing.T) {
	h := NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{Logger: discardLogger()})
	for body, want := range map[string]int{
		`{"queries": ["a"]}}`:      400,
		`{"queries": ["a"]}]`:      400,
		`{"queries": ["a"]} {}`:    400,
		`{"queries": ["a"]} x`:     400,
		"{\"queries\": [\"a\"]}\n": 200,
		`{"queries": ["a"]}  `:     200,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/retrieve", strings.NewReader(body)))
		if rec.Code != want {
			t.Errorf("%q: status %d (%s), want %d", body, rec.Code, rec.Body, want)
		}
	}
}
