package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentmem/memory/internal/weaviate"
	"github.com/agentmem/memory/sop"
)

// Procedural memory on a cluster. A store on a cluster keeps its procedures (SOPs) in a
// class of their own, PREFIX__SOPs, one object per procedure (docId and title: its name;
// text: its JSON, as SaveDir writes it), replicated and written at the store's replication
// factor and consistency level, so every client of the same cluster and prefix loads the
// same procedures. No collection's class can have that name: a collection's encoded name
// has "_" only before two hexadecimal digits. As with the sops/ directory of an embedded
// store, SOPs loads the procedures once (on first use) and SaveSOPs writes the whole
// library: the procedures of the class not in it are deleted (the last save wins).

// sopClassSuffix follows the prefix in the name of the procedures' class.
const sopClassSuffix = "__SOPs"

// sopClassDesc is the description of the procedures' class.
type sopClassDesc struct {
	Memory int `json:"memory"`
	SOPs   int `json:"sops"`
}

// sopClass is the name of the store's procedures' class.
func (cs *clusterStore) sopClass() string { return cs.prefix + sopClassSuffix }

// sopPage is how many procedures one request reads.
const sopPage = 500

// loadSOPs reads the procedures stored on the cluster into lib. A procedure that fails
// validation is logged and skipped, as a bad file of an embedded store's sops/ is; an
// error of the cluster is returned (SaveSOPs then refuses: it would delete what it could
// not read).
func (cs *clusterStore) loadSOPs(ctx context.Context, m *Memory, lib *sop.Library) error {
	cn := cs.sopClass()
	if _, err := cs.wc.Class(ctx, cn); errors.Is(err, weaviate.ErrNotFound) {
		return nil // none saved yet
	} else if err != nil {
		return err
	}
	return cs.eachSOP(ctx, func(h weaviate.Hit) error {
		text, _ := h.Props[weaviate.PropText].(string)
		procs, err := sop.Parse(h.ID+".json", []byte(text), false)
		if err != nil {
			m.log.Warn("memory: a procedure on the cluster could not be loaded", "class", cn, "name", h.ID, "err", err)
		}
		for _, p := range procs {
			if err := lib.Add(p); err != nil {
				m.log.Warn("memory: a procedure on the cluster could not be loaded", "class", cn, "name", h.ID, "err", err)
			}
		}
		return nil
	})
}

// eachSOP calls fn with every object of the procedures' class (with its text), in pages
// sorted by name.
func (cs *clusterStore) eachSOP(ctx context.Context, fn func(weaviate.Hit) error) error {
	seen := map[string]bool{}
	last, first := "", true
	for {
		q := weaviate.Query{Class: cs.sopClass(), Consistency: cs.level, Limit: sopPage, SortBy: weaviate.PropID, Fields: []string{weaviate.PropText}}
		if !first {
			q.Where = weaviate.Where(weaviate.PropID, weaviate.GreaterThan, last)
		}
		hits, err := cs.wc.Fetch(ctx, q)
		if err != nil {
			return err
		}
		for _, h := range hits {
			if !seen[h.ID] {
				seen[h.ID] = true
				if err := fn(h); err != nil {
					return err
				}
			}
		}
		if len(hits) > 0 {
			last, first = hits[len(hits)-1].ID, false
		}
		if len(hits) < sopPage {
			return nil
		}
	}
}

// saveSOPs is SaveSOPs on a cluster: every procedure of lib is written, then those of the
// class not in lib are deleted. Not one transaction: a failure part way leaves the
// procedures written so far and every earlier one (saving again completes it).
func (cs *clusterStore) saveSOPs(ctx context.Context, lib *sop.Library) error {
	if cs.sopErr != nil {
		return fmt.Errorf("memory: save procedures: those on the cluster could not be loaded, and saving would delete them (reopen the store): %w", cs.sopErr)
	}
	cn := cs.sopClass()
	desc, err := json.Marshal(sopClassDesc{Memory: 1, SOPs: 1})
	if err != nil {
		return err
	}
	err = cs.wc.CreateClass(ctx, weaviate.ClassConfig{Name: cn, Replication: cs.repl, Description: string(desc), DeletionStrategy: "TimeBasedResolution"})
	switch {
	case err == nil:
		if err := cs.awaitClass(ctx, cn); err != nil {
			return fmt.Errorf("memory: save procedures: %w", err)
		}
	case errors.Is(err, weaviate.ErrInvalid) && strings.Contains(strings.ToLower(err.Error()), "already exists"):
	default:
		return fmt.Errorf("memory: save procedures: %w", err)
	}
	procs := lib.List("")
	keep := make(map[string]bool, len(procs))
	var objs []weaviate.Object
	for _, p := range procs {
		data, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return fmt.Errorf("memory: save procedure %q: %w", p.Name, err)
		}
		keep[p.Name] = true
		objs = append(objs, weaviate.Object{ID: p.Name, Title: p.Name, Text: string(data)})
	}
	for len(objs) > 0 {
		part := objs[:min(len(objs), clusterBatch)]
		objs = objs[len(part):]
		if err := cs.wc.PutBatch(ctx, cn, cs.level, part); err != nil {
			return fmt.Errorf("memory: save procedures: %w", err)
		}
	}
	var stale []string
	if err := cs.eachSOP(ctx, func(h weaviate.Hit) error {
		if !keep[h.ID] {
			stale = append(stale, h.ID)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("memory: save procedures: %w", err)
	}
	sort.Strings(stale)
	for len(stale) > 0 {
		part := stale[:min(len(stale), clusterBatch)]
		stale = stale[len(part):]
		for {
			n, err := cs.wc.DeleteWhere(ctx, cn, cs.level, weaviate.Where(weaviate.PropID, weaviate.ContainsAny, part))
			if err != nil {
				return fmt.Errorf("memory: save procedures: %w", err)
			}
			if n == 0 {
				break
			}
		}
	}
	return nil
}

// sopTimeout bounds loading and saving the procedures of a store on a cluster (SOPs and
// SaveSOPs take no context).
const sopTimeout = 2 * time.Minute
