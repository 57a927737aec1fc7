package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/agentmem/memory/internal/httpretry"
)

// Object is one stored document.
type Object struct {
	ID       string         // our string id (property docId); the UUID is UUID(ID)
	Title    string         // property title
	Text     string         // property text
	Metadata map[string]any // values of the class's metadata fields (see Field)
	Vector   []float32      // nil: no vector
	// Key is the string the UUID is derived from ("": ID), for several objects that share
	// one docId (the chunks of one document).
	Key string
}

// objectJSON is an object as the REST API reads and writes it.
type objectJSON struct {
	Class      string         `json:"class"`
	ID         string         `json:"id"`
	Properties map[string]any `json:"properties"`
	Vector     []float32      `json:"vector,omitempty"`
}

func (o Object) toJSON(class string) (objectJSON, error) {
	if o.ID == "" {
		return objectJSON{}, errors.New("object with an empty id")
	}
	props := make(map[string]any, len(o.Metadata)+3)
	for k, v := range o.Metadata {
		if k == PropID || k == PropTitle || k == PropText || !propNameRE.MatchString(k) {
			return objectJSON{}, fmt.Errorf("object %q: metadata key %q invalid or reserved", o.ID, k)
		}
		props[k] = v
	}
	props[PropID], props[PropTitle], props[PropText] = o.ID, o.Title, o.Text
	key := o.Key
	if key == "" {
		key = o.ID
	}
	return objectJSON{Class: class, ID: UUID(key), Properties: props, Vector: o.Vector}, nil
}

func objectFromJSON(props map[string]any, vector []float32) Object {
	o := Object{Vector: vector}
	for k, v := range props {
		switch k {
		case PropID:
			o.ID, _ = v.(string)
		case PropTitle:
			o.Title, _ = v.(string)
		case PropText:
			o.Text, _ = v.(string)
		default:
			if o.Metadata == nil {
				o.Metadata = map[string]any{}
			}
			o.Metadata[k] = v
		}
	}
	return o
}

// BatchError reports the objects of a batch that Weaviate did not store, after all attempts.
// errors.Is matches the kinds of the failures (ErrConsistency when a write at ALL was refused).
type BatchError struct {
	Failed map[string]string // our id -> Weaviate's message (capped)
	kinds  []error
}

// Error names how many objects failed and the first few messages.
func (e *BatchError) Error() string {
	ids := make([]string, 0, len(e.Failed))
	for id := range e.Failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "weaviate: batch put: %d objects failed", len(ids))
	for i, id := range ids {
		if i == 3 {
			b.WriteString("; …")
			break
		}
		fmt.Fprintf(&b, "; %s: %s", id, e.Failed[id])
	}
	return b.String()
}

// Unwrap returns the sentinel kinds of the failures.
func (e *BatchError) Unwrap() []error { return e.kinds }

// batchResult is one entry of POST /v1/batch/objects's answer.
type batchResult struct {
	ID     string `json:"id"`
	Result struct {
		Errors *struct {
			Error []struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"errors"`
	} `json:"result"`
}

// PutBatch upserts objs into class at consistency level cl with one batch request. Objects
// whose write failed for a reason another attempt may not have (a replica down, a
// consistency level not reached) are sent again, up to the client's attempt limit; what still
// fails is returned as a *BatchError. A failure of the request itself is an *Error.
func (c *Client) PutBatch(ctx context.Context, class string, cl Consistency, objs []Object) error {
	const op = "batch put"
	if !classNameRE.MatchString(class) || !cl.valid() {
		return invalid(op, "class %q, consistency %q", class, cl)
	}
	pending := make(map[string]objectJSON, len(objs)) // by UUID
	byUUID := make(map[string]string, len(objs))      // UUID -> our id
	for _, o := range objs {
		j, err := o.toJSON(class)
		if err != nil {
			return invalid(op, "%v", err)
		}
		pending[j.ID] = j
		byUUID[j.ID] = o.ID
		if o.Key != "" {
			byUUID[j.ID] = o.Key
		}
	}
	failed := map[string]string{}
	var kinds []error
	for round := 1; len(pending) > 0; round++ {
		list := make([]objectJSON, 0, len(pending))
		for _, j := range pending {
			list = append(list, j)
		}
		sort.Slice(list, func(a, b int) bool { return list[a].ID < list[b].ID })
		data, err := json.Marshal(map[string]any{"objects": list})
		if err != nil {
			return invalid(op, "%v", err)
		}
		var results []batchResult
		err = c.do(ctx, request{op: op, method: http.MethodPost, path: withConsistency("/v1/batch/objects", cl), body: data,
			accept: func(status int, b []byte, attempt int) (*Error, bool) {
				if e, retry := acceptREST(status, b, attempt); e != nil {
					return e, retry
				}
				results = nil
				return decode(b, &results)
			}})
		if err != nil {
			return err
		}
		clear(failed)
		kinds = kinds[:0]
		retryable := map[string]objectJSON{}
		answered := make(map[string]bool, len(results))
		for _, r := range results {
			answered[r.ID] = true
			if r.Result.Errors == nil || len(r.Result.Errors.Error) == 0 {
				delete(pending, r.ID)
				continue
			}
			var msgs []string
			for _, m := range r.Result.Errors.Error {
				msgs = append(msgs, m.Message)
			}
			msg := capMsg(strings.Join(msgs, "; "))
			kind, retry := kindOfMessage(msg)
			id := byUUID[r.ID]
			if id == "" {
				id = r.ID
			}
			failed[id] = msg
			if !containsErr(kinds, kind) {
				kinds = append(kinds, kind)
			}
			if j, ok := pending[r.ID]; ok && retry {
				retryable[r.ID] = j
			}
		}
		for u, j := range pending {
			if !answered[u] { // not in the answer: unknown, send again
				failed[byUUID[u]] = "no result for this object in the answer"
				retryable[u] = j
				if !containsErr(kinds, ErrUnavailable) {
					kinds = append(kinds, ErrUnavailable)
				}
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if len(retryable) < len(failed) || round >= c.tries {
			return &BatchError{Failed: failed, kinds: kinds}
		}
		if err := httpretry.Sleep(ctx, c.backoff.Wait(round, 0), &BatchError{Failed: failed, kinds: kinds}); err != nil {
			return &BatchError{Failed: failed, kinds: append(kinds, err)}
		}
		pending = retryable
	}
	return nil
}

func containsErr(list []error, e error) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

// getJSON is GET /v1/objects/{class}/{id}'s answer.
type getJSON struct {
	Properties map[string]any `json:"properties"`
	Vector     []float32      `json:"vector"`
}

// Get reads the object with our id at consistency level cl, with its vector. A missing object
// is ErrNotFound.
func (c *Client) Get(ctx context.Context, class string, cl Consistency, id string) (Object, error) {
	if !classNameRE.MatchString(class) || !cl.valid() {
		return Object{}, invalid("get", "class %q, consistency %q", class, cl)
	}
	var got getJSON
	path := withConsistency("/v1/objects/"+url.PathEscape(class)+"/"+UUID(id)+"?include=vector", cl)
	err := c.do(ctx, request{op: "get " + id, method: http.MethodGet, path: path,
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if e, retry := acceptREST(status, b, attempt); e != nil {
				return e, retry
			}
			got = getJSON{}
			return decode(b, &got)
		}})
	if err != nil {
		return Object{}, err
	}
	return objectFromJSON(got.Properties, got.Vector), nil
}

// Delete deletes the object with our id at consistency level cl. A missing object is
// ErrNotFound, unless an earlier attempt of this call may have deleted it (then nil).
func (c *Client) Delete(ctx context.Context, class string, cl Consistency, id string) error {
	if !classNameRE.MatchString(class) || !cl.valid() {
		return invalid("delete", "class %q, consistency %q", class, cl)
	}
	path := withConsistency("/v1/objects/"+url.PathEscape(class)+"/"+UUID(id), cl)
	return c.do(ctx, request{op: "delete " + id, method: http.MethodDelete, path: path,
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if status == http.StatusNotFound && attempt > 1 {
				return nil, false
			}
			return acceptREST(status, b, attempt)
		}})
}

// DeleteWhere deletes the objects of class that match where, at consistency level cl, and
// returns how many were deleted. Weaviate deletes at most QUERY_MAXIMUM_RESULTS (10,000 by
// default) objects per call; call again while the count is not 0.
func (c *Client) DeleteWhere(ctx context.Context, class string, cl Consistency, where Filter) (int, error) {
	const op = "delete where"
	if !classNameRE.MatchString(class) || !cl.valid() {
		return 0, invalid(op, "class %q, consistency %q", class, cl)
	}
	w, err := where.rest()
	if err != nil {
		return 0, invalid(op, "%v", err)
	}
	data, err := json.Marshal(map[string]any{
		"match":  map[string]any{"class": class, "where": w},
		"output": "minimal",
		"dryRun": false,
	})
	if err != nil {
		return 0, invalid(op, "%v", err)
	}
	var resp struct {
		Results struct {
			Matches    int `json:"matches"`
			Successful int `json:"successful"`
			Failed     int `json:"failed"`
		} `json:"results"`
	}
	err = c.do(ctx, request{op: op, method: http.MethodDelete, path: withConsistency("/v1/batch/objects", cl), body: data,
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if e, retry := acceptREST(status, b, attempt); e != nil {
				return e, retry
			}
			return decode(b, &resp)
		}})
	if err != nil {
		return 0, err
	}
	if resp.Results.Failed > 0 {
		return resp.Results.Successful, &Error{Op: op, Kind: ErrUnavailable,
			Msg: fmt.Sprintf("%d of %d matching objects not deleted", resp.Results.Failed, resp.Results.Matches)}
	}
	return resp.Results.Successful, nil
}
