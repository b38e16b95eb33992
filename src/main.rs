//! The `pgdict` command line.

fn main() {
    eprintln!(
        "pgdict {}: the command line arrives with the CLI issue; see README.md",
        env!("CARGO_PKG_VERSION")
    );
}
