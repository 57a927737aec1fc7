package sop_test

import (
	"fmt"

	"github.com/agentmem/memory/sop"
)

func Example() {
	lib := sop.NewLibrary(sop.Options{})
	procs, err := sop.Parse("procedures.json", []byte(`[
	 {"name": "debug_python_code", "description": "Find and fix a bug in Python code.",
	  "trigger": "debug, bug, error, not working", "category": "coding", "priority": 8,
	  "steps": [{"action": "Reproduce the error and read the traceback."},
	            {"action": "Propose the smallest fix."},
	            {"action": "Run the tests again.", "condition": "fix proposed"}]},
	 {"name": "git_merge_conflict", "trigger": ["merge conflict", "rebase"], "category": "git",
	  "priority": 7, "steps": [{"action": "Run git status."}]}
	]`), true)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := lib.Add(procs...); err != nil {
		fmt.Println(err)
		return
	}
	for _, q := range []string{"I get errors when my script runs", "which debugger is best?", "Merge conflicts after a rebase"} {
		ms := lib.Match(q, 3, sop.MatchOptions{})
		if len(ms) == 0 {
			fmt.Printf("%q: no procedure\n", q)
			continue
		}
		fmt.Printf("%q: %s (score %.1f, triggers %q)\n", q, ms[0].SOP.Name, ms[0].Score, ms[0].MatchedTriggers)
	}
	best := lib.Match("my code is not working", 1, sop.MatchOptions{})[0]
	fmt.Print(sop.Render(best.SOP, sop.RenderContext{Query: "my code is not working"}))
	// Output:
	// "I get errors when my script runs": debug_python_code (score 14.0, triggers ["error"])
	// "which debugger is best?": no procedure
	// "Merge conflicts after a rebase": git_merge_conflict (score 28.5, triggers ["merge conflict" "rebase"])
	// Procedure debug_python_code: Find and fix a bug in Python code.
	// Task: my code is not working
	// 1. Reproduce the error and read the traceback.
	// 2. Propose the smallest fix.
	// 3. [if fix proposed] Run the tests again.
}

func ExampleLoadDir() {
	lib, err := sop.LoadDir("testdata/load/mixed", sop.Options{})
	fmt.Println(lib.Len(), "procedures loaded")
	fmt.Println(err)
	// Output:
	// 3 procedures loaded
	// sop: testdata/load/mixed/b_duplicate.json: procedure "debug_python_code": name: duplicate name
	// sop: testdata/load/mixed/c_array.json: [1] procedure "bad_two": priority: 99 is outside 0..10
	// sop: testdata/load/mixed/d_no_steps.json: procedure "no_steps": steps: no steps
}
