package memory

// Version is the version of this module, without the leading "v" of its git tag
// (v0.1.0 is tagged as "v0.1.0"). The CLI reports it (memory version, memory --version);
// CHANGELOG.md lists what each version changed.
const Version = "0.1.0"
