package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentmem/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// documentURITemplate is the URI template of the documents served as resources:
// memory://{collection}/{id}, both parts path-escaped (url.PathEscape).
const documentURITemplate = "memory://{collection}/{id}"

// defaultResourcePageSize is the default of Options.ResourcePageSize.
const defaultResourcePageSize = 100

// documentURI is the resource URI of document id of collection col.
func documentURI(col, id string) string {
	return "memory://" + url.PathEscape(col) + "/" + url.PathEscape(id)
}

// parseDocumentURI splits a DocumentURI into its collection and id.
func parseDocumentURI(uri string) (col, id string, err error) {
	rest, ok := strings.CutPrefix(uri, "memory://")
	if !ok {
		return "", "", fmt.Errorf("%w: resource URI %q is not memory://{collection}/{id}", ErrInvalidInput, uri)
	}
	c, i, ok := strings.Cut(rest, "/")
	if !ok || c == "" || i == "" {
		return "", "", fmt.Errorf("%w: resource URI %q is not memory://{collection}/{id}", ErrInvalidInput, uri)
	}
	if col, err = url.PathUnescape(c); err == nil {
		id, err = url.PathUnescape(i)
	}
	if err != nil {
		return "", "", fmt.Errorf("%w: resource URI %q: %v", ErrInvalidInput, uri, err)
	}
	return col, id, nil
}

// addResources registers the document template and the SOP prompts.
func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: documentURITemplate,
		Name:        "document",
		Title:       "A document of the long-term memory",
		Description: "One stored document, by collection and id (both path-escaped); resources/list lists them, collection by collection, in id order.",
		MIMEType:    "text/plain",
	}, s.readDocument)
	if s.o.SOPs == nil {
		return
	}
	for _, p := range s.o.SOPs.List("") {
		srv.AddPrompt(&mcp.Prompt{
			Name:        p.Name,
			Description: p.Description,
			Arguments: []*mcp.PromptArgument{{
				Name: "task", Description: "the task the procedure is applied to (shown in the first message)",
			}},
		}, s.sopPrompt)
	}
}

func (s *server) readDocument(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	col, id, err := parseDocumentURI(uri)
	if err != nil {
		return nil, err
	}
	d, err := s.m.Collection(col).Get(ctx, id)
	if errors.Is(err, memory.ErrNotFound) || errors.Is(err, memory.ErrCollectionNotFound) || errors.Is(err, memory.ErrInvalidCollection) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	text := d.Text
	if d.Title != "" {
		text = d.Title + "\n\n" + d.Text
	}
	contents := []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}
	if len(d.Metadata) > 0 {
		md, err := json.Marshal(d.Metadata)
		if err != nil {
			return nil, err
		}
		contents = append(contents, &mcp.ResourceContents{URI: uri + "#metadata", MIMEType: "application/json", Text: string(md)})
	}
	return &mcp.ReadResourceResult{Contents: contents}, nil
}

// resourceCursor is the position of a resources/list page: after document After of
// collection Collection.
type resourceCursor struct {
	Collection string `json:"c"`
	After      string `json:"a"`
}

// listResources answers resources/list with the stored documents, ResourcePageSize at a
// time, collection by collection (sorted), each in id order; the cursor names the last
// document listed, so that a page costs its size, not the documents before it.
func (s *server) listResources(ctx context.Context, cursor string) (*mcp.ListResourcesResult, error) {
	var cur resourceCursor
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err == nil {
			err = json.Unmarshal(raw, &cur)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: resources/list cursor %q", ErrInvalidInput, cursor)
		}
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	var last resourceCursor // the last document listed
	cols, err := s.m.Collections(ctx)
	if err != nil {
		return nil, err
	}
	for _, col := range cols {
		if col < cur.Collection {
			continue
		}
		after := ""
		if col == cur.Collection {
			after = cur.After
		}
		// One more than the page holds tells whether there is a next page.
		want := s.o.ResourcePageSize + 1 - len(res.Resources)
		docs, err := s.m.Collection(col).Find(ctx, memory.FindOptions{After: after, Limit: want})
		if errors.Is(err, memory.ErrCollectionNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if len(res.Resources) == s.o.ResourcePageSize {
				c, err := json.Marshal(last)
				if err != nil {
					return nil, err
				}
				res.NextCursor = base64.RawURLEncoding.EncodeToString(c)
				return res, nil
			}
			res.Resources = append(res.Resources, &mcp.Resource{
				URI: documentURI(col, d.ID), Name: d.ID, Title: d.Title, MIMEType: "text/plain",
				Description: "document " + d.ID + " of collection " + col, Size: int64(len(d.Text)),
			})
			last = resourceCursor{Collection: col, After: d.ID}
		}
	}
	return res, nil
}

// sopPrompt renders a procedure as a prompt: a first message naming it (and the task,
// when given), then one message per step.
func (s *server) sopPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p, err := s.o.SOPs.Get(req.Params.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: prompt %q", err, req.Params.Name)
	}
	task := req.Params.Arguments["task"]
	if len(task) > s.o.MaxQueryBytes {
		return nil, fmt.Errorf("%w: task is %d bytes, over %d (MaxQueryBytes)", ErrTooLarge, len(task), s.o.MaxQueryBytes)
	}
	head := "Follow the procedure " + p.Name
	if p.Description != "" {
		head += ": " + p.Description
	}
	if task != "" {
		head += "\nTask: " + task
	}
	msgs := []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: head}}}
	for i, st := range p.Steps {
		text := fmt.Sprintf("Step %d of %d: %s", i+1, len(p.Steps), st.Action)
		if st.Condition != "" {
			text += " (only when: " + st.Condition + ")"
		}
		msgs = append(msgs, &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: text}})
	}
	return &mcp.GetPromptResult{Description: p.Description, Messages: msgs}, nil
}
