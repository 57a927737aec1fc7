package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Operator is a where-filter operator.
type Operator string

// The operators. And and Or combine Operands; the others compare the property Path with Value.
const (
	Equal            Operator = "Equal"
	NotEqual         Operator = "NotEqual"
	GreaterThan      Operator = "GreaterThan"
	GreaterThanEqual Operator = "GreaterThanEqual"
	LessThan         Operator = "LessThan"
	LessThanEqual    Operator = "LessThanEqual"
	Like             Operator = "Like"
	ContainsAny      Operator = "ContainsAny"
	ContainsAll      Operator = "ContainsAll"
	And              Operator = "And"
	Or               Operator = "Or"
)

// Filter is a where filter. The zero Filter means no filter.
//
// Value's Go type picks Weaviate's value field: string (valueText), int, int64 (valueInt),
// float64 (valueNumber), bool (valueBoolean), time.Time (valueDate, RFC 3339), and slices of
// these for ContainsAny / ContainsAll.
type Filter struct {
	Operator Operator
	Path     string // a property name, e.g. PropID or a metadata field
	Value    any
	Operands []Filter // for And / Or
}

// Where returns the filter "path op value".
func Where(path string, op Operator, value any) Filter {
	return Filter{Operator: op, Path: path, Value: value}
}

// AllOf is the And of fs.
func AllOf(fs ...Filter) Filter { return Filter{Operator: And, Operands: fs} }

// AnyOf is the Or of fs.
func AnyOf(fs ...Filter) Filter { return Filter{Operator: Or, Operands: fs} }

// IsZero reports whether f is the empty filter.
func (f Filter) IsZero() bool { return f.Operator == "" }

// value returns the Weaviate value key ("Text", "Int", ...), whether it is a list, and the
// value normalised for JSON.
func (f Filter) value() (key string, list bool, v any, err error) {
	switch x := f.Value.(type) {
	case string:
		return "Text", false, x, nil
	case []string:
		return "Text", true, x, nil
	case int:
		return "Int", false, int64(x), nil
	case int64:
		return "Int", false, x, nil
	case []int:
		out := make([]int64, len(x))
		for i, n := range x {
			out[i] = int64(n)
		}
		return "Int", true, out, nil
	case []int64:
		return "Int", true, x, nil
	case float64:
		return "Number", false, x, nil
	case []float64:
		return "Number", true, x, nil
	case bool:
		return "Boolean", false, x, nil
	case []bool:
		return "Boolean", true, x, nil
	case time.Time:
		return "Date", false, x.Format(time.RFC3339Nano), nil
	case []time.Time:
		out := make([]string, len(x))
		for i, t := range x {
			out[i] = t.Format(time.RFC3339Nano)
		}
		return "Date", true, out, nil
	default:
		return "", false, nil, fmt.Errorf("filter on %q: unsupported value type %T", f.Path, f.Value)
	}
}

func (f Filter) check() error {
	switch f.Operator {
	case And, Or:
		if len(f.Operands) == 0 {
			return fmt.Errorf("%s without operands", f.Operator)
		}
		for _, o := range f.Operands {
			if err := o.check(); err != nil {
				return err
			}
		}
		return nil
	case Equal, NotEqual, GreaterThan, GreaterThanEqual, LessThan, LessThanEqual, Like, ContainsAny, ContainsAll:
		if !propNameRE.MatchString(f.Path) {
			return fmt.Errorf("filter path %q", f.Path)
		}
		_, list, _, err := f.value()
		if err != nil {
			return err
		}
		if list != (f.Operator == ContainsAny || f.Operator == ContainsAll) {
			return fmt.Errorf("filter on %q: %s takes a %s", f.Path, f.Operator, map[bool]string{true: "single value", false: "list"}[list])
		}
		return nil
	default:
		return fmt.Errorf("filter operator %q", f.Operator)
	}
}

// rest renders f as the REST API's WhereFilter JSON (lists as value<Type>Array).
func (f Filter) rest() (map[string]any, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.restUnchecked(), nil
}

func (f Filter) restUnchecked() map[string]any {
	out := map[string]any{"operator": string(f.Operator)}
	if f.Operator == And || f.Operator == Or {
		ops := make([]map[string]any, len(f.Operands))
		for i, o := range f.Operands {
			ops[i] = o.restUnchecked()
		}
		out["operands"] = ops
		return out
	}
	key, list, v, _ := f.value()
	out["path"] = []string{f.Path}
	if list {
		out["value"+key+"Array"] = v
	} else {
		out["value"+key] = v
	}
	return out
}

// graphQL renders f as a GraphQL where argument (lists as value<Type>: [...]).
func (f Filter) graphQL() (string, error) {
	if err := f.check(); err != nil {
		return "", err
	}
	var b strings.Builder
	f.writeGraphQL(&b)
	return b.String(), nil
}

func (f Filter) writeGraphQL(b *strings.Builder) {
	b.WriteString("{operator: ")
	b.WriteString(string(f.Operator))
	if f.Operator == And || f.Operator == Or {
		b.WriteString(", operands: [")
		for i, o := range f.Operands {
			if i > 0 {
				b.WriteString(", ")
			}
			o.writeGraphQL(b)
		}
		b.WriteString("]}")
		return
	}
	key, _, v, _ := f.value()
	b.WriteString(", path: [")
	b.WriteString(gqlString(f.Path))
	b.WriteString("], value")
	b.WriteString(key)
	b.WriteString(": ")
	b.WriteString(gqlValue(v))
	b.WriteString("}")
}

// gqlString quotes s as a GraphQL string: JSON's string escapes are valid GraphQL.
func gqlString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// gqlValue renders a JSON-able value as a GraphQL literal (JSON arrays, strings, numbers and
// booleans are GraphQL literals too).
func gqlValue(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func gqlVector(v []float32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}

// Query is a search. Class and Limit are required; the search kind picks which of Text,
// Vector and Alpha it uses.
type Query struct {
	Class       string
	Consistency Consistency // "" sends none (Weaviate's default)
	Limit       int
	Where       Filter   // the zero Filter: none
	Properties  []string // BM25 and hybrid: properties searched ("title^2" boosts); default title, text
	Text        string   // BM25 and hybrid: the query text
	Vector      []float32
	// Alpha is hybrid's weight of the vector side, sent as is: 0 is keyword only, 1 vector
	// only, 0.5 equal.
	Alpha float64
	// Explain asks for explainScore (BM25 and hybrid).
	Explain bool
	// Fields are more properties to return in Hit.Props (docId always comes back).
	Fields []string
	// WithVector returns each hit's vector (Hit.Vector).
	WithVector bool
	// SortBy sorts Fetch's results by this property, ascending ("": Weaviate's order).
	SortBy string
	// After is Fetch's cursor: the UUID of the last object of the previous page ("" starts
	// at the beginning). Weaviate takes no Where with it.
	After string
}

// Hit is one search result.
type Hit struct {
	ID       string  // our id (docId)
	UUID     string  // Weaviate's id
	Score    float64 // BM25 and hybrid: Weaviate's score; nearVector: 1 - Distance
	Distance float64 // nearVector only
	Explain  string  // explainScore when asked for (capped at MaxMessage bytes)
	// Props holds the properties of Query.Fields that the object has (JSON numbers as
	// float64, arrays as []any).
	Props  map[string]any
	Vector []float32 // with Query.WithVector
}

var boostedPropRE = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*(\^[0-9]+(\.[0-9]+)?)?$`)

// BM25 runs a keyword query (Weaviate's bm25 operator) on q.Properties.
func (c *Client) BM25(ctx context.Context, q Query) ([]Hit, error) {
	props, err := searchProps(q.Properties)
	if err != nil {
		return nil, invalid("bm25", "%v", err)
	}
	arg := fmt.Sprintf("bm25: {query: %s, properties: %s}", gqlString(q.Text), props)
	return c.get(ctx, "bm25", q, arg, "score")
}

// NearVector runs a vector query (nearVector) with q.Vector.
func (c *Client) NearVector(ctx context.Context, q Query) ([]Hit, error) {
	if len(q.Vector) == 0 {
		return nil, invalid("nearVector", "empty vector")
	}
	arg := fmt.Sprintf("nearVector: {vector: %s}", gqlVector(q.Vector))
	return c.get(ctx, "nearVector", q, arg, "distance")
}

// Hybrid runs a hybrid query (BM25 on q.Properties and q.Vector, fused by rankedFusion with
// weight q.Alpha on the vector side).
func (c *Client) Hybrid(ctx context.Context, q Query) ([]Hit, error) {
	props, err := searchProps(q.Properties)
	if err != nil {
		return nil, invalid("hybrid", "%v", err)
	}
	if q.Alpha < 0 || q.Alpha > 1 {
		return nil, invalid("hybrid", "alpha %v outside [0, 1]", q.Alpha)
	}
	arg := fmt.Sprintf("hybrid: {query: %s, alpha: %s, fusionType: rankedFusion, properties: %s",
		gqlString(q.Text), strconv.FormatFloat(q.Alpha, 'g', -1, 64), props)
	if len(q.Vector) > 0 {
		arg += ", vector: " + gqlVector(q.Vector)
	}
	arg += "}"
	return c.get(ctx, "hybrid", q, arg, "score")
}

func searchProps(props []string) (string, error) {
	if len(props) == 0 {
		props = []string{PropTitle, PropText}
	}
	for _, p := range props {
		if !boostedPropRE.MatchString(p) {
			return "", fmt.Errorf("property %q", p)
		}
	}
	return gqlValue(props), nil
}

// graphQLResponse is POST /v1/graphql's answer.
type graphQLResponse struct {
	Data   map[string]map[string][]json.RawMessage `json:"data"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

type hitJSON struct {
	DocID      string `json:"docId"`
	Additional struct {
		ID           string          `json:"id"`
		Score        json.RawMessage `json:"score"`
		Distance     *float64        `json:"distance"`
		ExplainScore string          `json:"explainScore"`
		Vector       []float32       `json:"vector"`
	} `json:"_additional"`
}

// Fetch reads objects without ranking them: those matching q.Where (at most q.Limit,
// sorted by q.SortBy when set), or, with q.After set, a page of the class in UUID order
// after q.After. (The cursor reads one replica's shards: on a class of several shards it
// may not list every object; page with SortBy and a Where on the sorted property.)
func (c *Client) Fetch(ctx context.Context, q Query) ([]Hit, error) {
	if q.After != "" && !q.Where.IsZero() {
		return nil, invalid("fetch", "a cursor (After) with a Where filter")
	}
	arg := ""
	if q.After != "" {
		arg = "after: " + gqlString(q.After)
	}
	return c.get(ctx, "fetch", q, arg, "")
}

// get runs a GraphQL Get with the search argument arg.
func (c *Client) get(ctx context.Context, op string, q Query, arg, scoreField string) ([]Hit, error) {
	if !classNameRE.MatchString(q.Class) || !q.Consistency.valid() || q.Limit <= 0 {
		return nil, invalid(op, "class %q, consistency %q, limit %d", q.Class, q.Consistency, q.Limit)
	}
	var args []string
	if arg != "" {
		args = append(args, arg)
	}
	args = append(args, "limit: "+strconv.Itoa(q.Limit))
	if !q.Where.IsZero() {
		w, err := q.Where.graphQL()
		if err != nil {
			return nil, invalid(op, "%v", err)
		}
		args = append(args, "where: "+w)
	}
	if q.Consistency != "" {
		args = append(args, "consistencyLevel: "+string(q.Consistency))
	}
	if q.SortBy != "" {
		if !propNameRE.MatchString(q.SortBy) {
			return nil, invalid(op, "sort by %q", q.SortBy)
		}
		args = append(args, "sort: [{path: ["+gqlString(q.SortBy)+"], order: asc}]")
	}
	fields := "id " + scoreField
	if q.Explain && scoreField == "score" {
		fields += " explainScore"
	}
	if q.WithVector {
		fields += " vector"
	}
	props := PropID
	for _, f := range q.Fields {
		if !propNameRE.MatchString(f) {
			return nil, invalid(op, "field %q", f)
		}
		if f != PropID {
			props += " " + f
		}
	}
	gql := fmt.Sprintf("{ Get { %s(%s) { %s _additional { %s } } } }", q.Class, strings.Join(args, ", "), props, strings.TrimSpace(fields))
	var rows []json.RawMessage
	if err := c.graphQL(ctx, op, gql, "Get", q.Class, &rows); err != nil {
		return nil, err
	}
	hits := make([]Hit, 0, len(rows))
	for _, raw := range rows {
		var h hitJSON
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, &Error{Op: op, Kind: ErrUnavailable, Msg: capMsg("malformed hit: " + err.Error()), Cause: err}
		}
		hit := Hit{ID: h.DocID, UUID: h.Additional.ID, Explain: capMsg(h.Additional.ExplainScore), Vector: h.Additional.Vector}
		if len(q.Fields) > 0 {
			var all map[string]any
			if err := json.Unmarshal(raw, &all); err != nil {
				return nil, &Error{Op: op, Kind: ErrUnavailable, Msg: capMsg("malformed hit: " + err.Error()), Cause: err}
			}
			hit.Props = make(map[string]any, len(q.Fields))
			for _, f := range q.Fields {
				if v, ok := all[f]; ok && v != nil {
					hit.Props[f] = v
				}
			}
		}
		if h.Additional.Distance != nil {
			hit.Distance = *h.Additional.Distance
			hit.Score = 1 - hit.Distance
		}
		if len(h.Additional.Score) > 0 && string(h.Additional.Score) != "null" {
			s, err := parseScore(h.Additional.Score)
			if err != nil {
				return nil, &Error{Op: op, Kind: ErrUnavailable, Msg: capMsg("malformed score: " + err.Error()), Cause: err}
			}
			hit.Score = s
		}
		hits = append(hits, hit)
	}
	return hits, nil
}

// parseScore reads _additional.score, which Weaviate's GraphQL gives as a string.
func parseScore(raw json.RawMessage) (float64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strconv.ParseFloat(s, 64)
	}
	var f float64
	err := json.Unmarshal(raw, &f)
	return f, err
}

// graphQL posts query and decodes data[root][class] into rows. GraphQL errors are mapped by
// their message (see kindOfMessage); data without the class is ErrUnavailable.
func (c *Client) graphQL(ctx context.Context, op, query, root, class string, rows *[]json.RawMessage) error {
	data, err := json.Marshal(map[string]string{"query": query})
	if err != nil {
		return invalid(op, "%v", err)
	}
	return c.do(ctx, request{op: op, method: http.MethodPost, path: "/v1/graphql", body: data,
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if e, retry := acceptREST(status, b, attempt); e != nil {
				return e, retry
			}
			var resp graphQLResponse
			if e, retry := decode(b, &resp); e != nil {
				return e, retry
			}
			if len(resp.Errors) > 0 {
				msgs := make([]string, len(resp.Errors))
				for i, m := range resp.Errors {
					msgs[i] = m.Message
				}
				msg := capMsg(strings.Join(msgs, "; "))
				kind, retry := kindOfMessage(msg)
				return &Error{Kind: kind, Msg: msg}, retry
			}
			got, ok := resp.Data[root][class]
			if !ok {
				return &Error{Kind: ErrUnavailable, Msg: "no " + root + "." + class + " in the answer"}, true
			}
			*rows = got
			return nil, false
		}})
}

// Count returns the number of objects of class that match where (the zero Filter: all), by
// GraphQL Aggregate. Aggregate takes no consistency level: it counts what the shards the
// answering node asks hold.
func (c *Client) Count(ctx context.Context, class string, where Filter) (int, error) {
	const op = "count"
	if !classNameRE.MatchString(class) {
		return 0, invalid(op, "class %q", class)
	}
	arg := ""
	if !where.IsZero() {
		w, err := where.graphQL()
		if err != nil {
			return 0, invalid(op, "%v", err)
		}
		arg = "(where: " + w + ")"
	}
	gql := fmt.Sprintf("{ Aggregate { %s%s { meta { count } } } }", class, arg)
	var rows []json.RawMessage
	if err := c.graphQL(ctx, op, gql, "Aggregate", class, &rows); err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	var agg struct {
		Meta struct {
			Count int `json:"count"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(rows[0], &agg); err != nil {
		return 0, &Error{Op: op, Kind: ErrUnavailable, Msg: capMsg("malformed count: " + err.Error()), Cause: err}
	}
	return agg.Meta.Count, nil
}
