package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
)

// TestUpdateDescription: the class is read, then written back whole with the new
// description (every other field as read); an error of update writes nothing.
func TestUpdateDescription(t *testing.T) {
	const class = `{"class":"Doc","description":"old","vectorizer":"none","replicationConfig":{"factor":3},"properties":[{"name":"docId","dataType":["text"]}]}`
	f := newFake(t, func(_ int, r *http.Request, _ []byte) (int, string) {
		if r.Method == http.MethodGet {
			return 200, class
		}
		return 200, `{}`
	})
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	err := c.UpdateDescription(context.Background(), "Doc", func(old string) (string, error) {
		if old != "old" {
			t.Errorf("update given %q, want old", old)
		}
		return "new", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].Method != "GET" || reqs[1].Method != "PUT" || reqs[1].Path != "/v1/schema/Doc" {
		t.Fatalf("requests %+v", reqs)
	}
	var got, want map[string]any
	if err := json.Unmarshal(reqs[1].Body, &got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(class), &want)
	want["description"] = "new"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
	boom := errors.New("boom")
	if err := c.UpdateDescription(context.Background(), "Doc", func(string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("update's error: %v", err)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d requests after a failed update, want 3 (one more read, no write)", n)
	}
	if err := c.UpdateDescription(context.Background(), "bad name", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad class name: %v", err)
	}
}
