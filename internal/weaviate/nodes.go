package weaviate

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
)

// ShardReplicas counts the copies of one shard of a class.
type ShardReplicas struct {
	Want int // the replicas the schema assigns the shard (its replication factor)
	Live int // the nodes of the answering node's membership that answered holding it
}

// Replicas is what one node knows of a class's shards and of the nodes holding them.
type Replicas struct {
	// Shards maps each shard a live node holds to its counts (nil when Unanswered is set).
	Shards map[string]ShardReplicas
	// Unanswered names a node the answering node counts as a cluster member but that did
	// not answer it, or did not report the class (a node just restarted, whose shards are
	// not loaded yet: Weaviate then answers the whole call 404); "" when every member
	// answered. Weaviate counts such a node in the replica set of its writes, so it refuses
	// a level the node is needed for.
	Unanswered string
}

// nodeFailedRE matches Weaviate's answer when a member did not answer the node status
// fan-out: `node: NAME: send http request: ...`.
var nodeFailedRE = regexp.MustCompile(`(?:^|; )node: ([^:;\s]+): `)

// Replicas asks a node (GET /v1/nodes/{class}?output=verbose; one pass over the nodes, no
// waits: the caller decides what a failure means) which of its cluster members hold each shard of class.
//
// Weaviate builds the replica set of a write from the members its gossip layer lists, not
// from the schema: once a node that went down or was cut off is dropped from the membership
// (about 5 s after it stops answering), a write at ALL is acknowledged by the replicas left,
// and one at QUORUM by a majority of those. Comparing Live with Want shows it.
func (c *Client) Replicas(ctx context.Context, class string) (Replicas, error) {
	if !classNameRE.MatchString(class) {
		return Replicas{}, invalid("replicas", "class %q", class)
	}
	var resp struct {
		Nodes []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Shards []struct {
				Name     string `json:"name"`
				Class    string `json:"class"`
				Replicas int    `json:"numberOfReplicas"`
				Factor   int    `json:"replicationFactor"`
			} `json:"shards"`
		} `json:"nodes"`
	}
	var out Replicas
	err := c.do(ctx, request{op: "replicas of " + class, method: http.MethodGet, tries: len(c.nodes),
		path: "/v1/nodes/" + url.PathEscape(class) + "?output=verbose",
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			if status >= 500 {
				if m := nodeFailedRE.FindStringSubmatch(messageOf(b)); m != nil {
					out.Unanswered = m[1]
					return nil, false
				}
			}
			if status == http.StatusNotFound {
				// GetNodeStatus answers 404 as soon as one member has no status for the
				// class; a class that is really gone fails the write itself.
				out.Unanswered = "a node without class " + class
				return nil, false
			}
			if e, retry := acceptREST(status, b, attempt); e != nil {
				return e, retry
			}
			return decode(b, &resp)
		}})
	if err != nil || out.Unanswered != "" {
		return out, err
	}
	out.Shards = map[string]ShardReplicas{}
	for _, n := range resp.Nodes {
		for _, s := range n.Shards {
			if s.Class != "" && s.Class != class {
				continue
			}
			r := out.Shards[s.Name]
			r.Live++
			r.Want = max(r.Want, s.Replicas, s.Factor)
			out.Shards[s.Name] = r
		}
	}
	return out, nil
}
