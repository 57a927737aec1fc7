// Package release holds the checks of what a release of this repository publishes, as
// tests only (it has no API):
//
//   - TestModuleProxy serves the core module, and each adapter module under adapters/, from a
//     file-based module proxy built from their git tags (v0.1.0, adapters/NAME/v0.1.0), or
//     from HEAD's committed tree when the clone has no such tag, and has a fresh module fetch
//     and build each of them, and `go install` the CLI, with no network: what a user of the
//     release gets from `go get`.
//   - TestWorkspace checks the go.work of the repository: it covers every module, replaces
//     only the core's released version, and leaves the core's own build list unchanged.
//   - TestReadmeGoBlocks compiles every Go code block of README.md as a program against the
//     working tree; TestReadmeSetup and TestReadmeContents check its set-up commands and its
//     table of contents.
//
// The tests that run the go command skip under -short.
package release
