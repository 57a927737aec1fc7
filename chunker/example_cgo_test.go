//go:build cgo

package chunker_test

import (
	"fmt"

	"github.com/agentmem/memory/chunker"
)

func ExampleCode() {
	src := []byte(`package geo

// Point is a position on a plane.
type Point struct{ X, Y float64 }

// Dist returns the distance between two points.
func Dist(a, b Point) float64 {
	dx, dy := a.X-b.X, a.Y-b.Y
	return dx*dx + dy*dy
}
`)
	chunks, err := chunker.Code("geo/point.go", src, chunker.CodeOptions{NoMergeDefinitions: true})
	if err != nil {
		panic(err)
	}
	for _, c := range chunks {
		fmt.Printf("%s %q lines %d-%d doc=%q\n", c.Kind, c.QualifiedName, c.StartLine, c.EndLine, c.Doc)
	}
	// Output:
	// code "" lines 1-1 doc=""
	// struct "Point" lines 3-4 doc="Point is a position on a plane."
	// function "Dist" lines 6-10 doc="Dist returns the distance between two points."
}

func ExampleChunk_EmbeddingText() {
	src := []byte("class Stack:\n    def push(self, x):\n        \"\"\"Push x on top.\"\"\"\n        self.items.append(x)\n")
	chunks, _ := chunker.Code("stack.py", src, chunker.CodeOptions{Budget: 60, NoMergeDefinitions: true})
	for _, c := range chunks {
		if c.QualifiedName == "Stack.push" {
			fmt.Println(c.EmbeddingText())
		}
	}
	// Output:
	// # stack.py
	// # method Stack.push
	// # in: class Stack:
	// # doc: Push x on top.
	//
	// def push(self, x):
	//         """Push x on top."""
	//         self.items.append(x)
}
