//! The `pgdict` binary: the command lives in the library (`lib.rs`), where the fuzz targets
//! reach its parsers too.

fn main() -> std::process::ExitCode {
    pgdict_cli::main()
}
