package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Example serves a temporary store over MCP and drives it as an agent's client would:
// memory_add stores two documents, memory_search finds one of them.
func Example() {
	ctx := context.Background()
	m, err := memory.Open("") // a temporary store, removed on Close
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := m.Close(); err != nil {
			fmt.Println(err)
		}
	}()
	srv := mcpserver.New(m, mcpserver.Options{Logger: slog.New(slog.DiscardHandler)})

	// In-memory transports stand in for stdio or HTTP (see NewHTTPHandler).
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	// A client decodes the tools' JSON results into its own types.
	var added struct {
		Stored     int    `json:"stored"`
		Collection string `json:"collection"`
	}
	if err := callTool(ctx, cs, "memory_add", map[string]any{"documents": []map[string]any{
		{"id": "otters", "title": "Otters", "text": "Sea otters hold hands while they sleep."},
		{"id": "bbolt", "title": "bbolt", "text": "bbolt is an embedded key/value store for Go."},
	}}, &added); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("stored %d in %q\n", added.Stored, added.Collection)

	var found struct {
		Results []struct {
			ID   string `json:"id"`
			Text string `json:"text"`
		} `json:"results"`
	}
	if err := callTool(ctx, cs, "memory_search", map[string]any{"query": "sleeping otters", "top_k": 1, "mode": "bm25"}, &found); err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range found.Results {
		fmt.Printf("%s: %s\n", r.ID, r.Text)
	}
	// Output:
	// stored 2 in "default"
	// otters: Sea otters hold hands while they sleep.
}

// callTool calls a tool and decodes its structured output into out; a tool error is
// returned as an error.
func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, out any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s failed: %v", name, res.Content)
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
