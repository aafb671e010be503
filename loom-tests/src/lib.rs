//! loom models live in tests/; how to run them: docs/TESTING.md.
