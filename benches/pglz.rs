//! Placeholder: the side-by-side pglz benchmark (pgdict, PostgreSQL's C, the pglz crate).
fn main() {}
