package weaviate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// ClassInfo is a class as the schema lists it.
type ClassInfo struct {
	Name        string
	Description string
	// Properties maps each property name to its data type ("text", "number[]", ...).
	Properties map[string]DataType
	// Replication is the class's replication factor (0 when the schema does not say).
	Replication int
}

// schemaJSON is GET /v1/schema's answer.
type schemaJSON struct {
	Classes []struct {
		Class             string `json:"class"`
		Description       string `json:"description"`
		ReplicationConfig *struct {
			Factor int `json:"factor"`
		} `json:"replicationConfig"`
		Properties []struct {
			Name     string   `json:"name"`
			DataType []string `json:"dataType"`
		} `json:"properties"`
	} `json:"classes"`
}

// Classes lists the classes of the schema whose names begin with prefix ("" lists all).
func (c *Client) Classes(ctx context.Context, prefix string) ([]ClassInfo, error) {
	var got schemaJSON
	err := c.do(ctx, request{op: "get schema", method: http.MethodGet, path: "/v1/schema",
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if e, retry := acceptREST(status, b, attempt); e != nil {
				return e, retry
			}
			got = schemaJSON{}
			return decode(b, &got)
		}})
	if err != nil {
		return nil, err
	}
	out := make([]ClassInfo, 0, len(got.Classes))
	for _, cl := range got.Classes {
		if !strings.HasPrefix(cl.Class, prefix) {
			continue
		}
		ci := ClassInfo{Name: cl.Class, Description: cl.Description, Properties: make(map[string]DataType, len(cl.Properties))}
		if cl.ReplicationConfig != nil {
			ci.Replication = cl.ReplicationConfig.Factor
		}
		for _, p := range cl.Properties {
			if len(p.DataType) == 1 {
				ci.Properties[p.Name] = DataType(p.DataType[0])
			}
		}
		out = append(out, ci)
	}
	return out, nil
}

// Class returns one class of the schema; a missing class is ErrNotFound.
func (c *Client) Class(ctx context.Context, name string) (ClassInfo, error) {
	if !classNameRE.MatchString(name) {
		return ClassInfo{}, invalid("get class", "class name %q", name)
	}
	var got struct {
		Class       string `json:"class"`
		Description string `json:"description"`
		Replication *struct {
			Factor int `json:"factor"`
		} `json:"replicationConfig"`
		Properties []struct {
			Name     string   `json:"name"`
			DataType []string `json:"dataType"`
		} `json:"properties"`
	}
	err := c.do(ctx, request{op: "get class " + name, method: http.MethodGet, path: "/v1/schema/" + url.PathEscape(name),
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if e, retry := acceptREST(status, b, attempt); e != nil {
				return e, retry
			}
			return decode(b, &got)
		}})
	if err != nil {
		return ClassInfo{}, err
	}
	ci := ClassInfo{Name: got.Class, Description: got.Description, Properties: make(map[string]DataType, len(got.Properties))}
	if got.Replication != nil {
		ci.Replication = got.Replication.Factor
	}
	for _, p := range got.Properties {
		if len(p.DataType) == 1 {
			ci.Properties[p.Name] = DataType(p.DataType[0])
		}
	}
	return ci, nil
}

// AddProperty adds the metadata field f to class. A retried add that finds the property
// already there (the first attempt succeeded but its answer was lost) succeeds.
func (c *Client) AddProperty(ctx context.Context, class string, f Field) error {
	const op = "add property"
	if !classNameRE.MatchString(class) {
		return invalid(op, "class name %q", class)
	}
	p, err := fieldProperty(f)
	if err != nil {
		return invalid(op, "%v", err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return invalid(op, "%v", err)
	}
	return c.do(ctx, request{op: op + " " + class + "." + f.Name, method: http.MethodPost,
		path: "/v1/schema/" + url.PathEscape(class) + "/properties", body: data,
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			e, retry := acceptREST(status, b, attempt)
			if e != nil && attempt > 1 && e.Kind == ErrInvalid && strings.Contains(strings.ToLower(e.Msg), "already exists") {
				return nil, false
			}
			return e, retry
		}})
}

// UpdateDescription replaces the description of class with what update makes of the
// current one (read first, then the class written back whole with the new description:
// Weaviate's schema update takes the full class). A class changed in between (a property
// added) may make Weaviate reject the write: ErrInvalid, nothing changed.
func (c *Client) UpdateDescription(ctx context.Context, class string, update func(old string) (string, error)) error {
	const op = "update class description"
	if !classNameRE.MatchString(class) {
		return invalid(op, "class name %q", class)
	}
	path := "/v1/schema/" + url.PathEscape(class)
	var raw map[string]any
	err := c.do(ctx, request{op: op + " " + class, method: http.MethodGet, path: path,
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if e, retry := acceptREST(status, b, attempt); e != nil {
				return e, retry
			}
			raw = nil
			return decode(b, &raw)
		}})
	if err != nil {
		return err
	}
	old, _ := raw["description"].(string)
	desc, err := update(old)
	if err != nil {
		return err
	}
	raw["description"] = desc
	data, err := json.Marshal(raw)
	if err != nil {
		return invalid(op, "%v", err)
	}
	return c.do(ctx, request{op: op + " " + class, method: http.MethodPut, path: path, body: data})
}
