//! Links PostgreSQL 15's `libpgcommon.a` statically, for its C pglz (`pg_lzcompress.o`), and
//! finds `libpq.so` (`pg_config --libdir`), for its connection-string parser.
//!
//! Where the archive comes from, first match wins:
//!
//! 1. `PGDICT_PGCOMMON_LIB_DIR`: a directory holding `libpgcommon.a` (no version check).
//! 2. `PGDICT_PG_CONFIG`: the path of a `pg_config`; its `--pkglibdir` holds the archive.
//! 3. `/usr/lib/postgresql/15/bin/pg_config` (Debian's layout), if it exists.
//! 4. `pg_config` on `PATH`.
//!
//! For 2–4 the `pg_config` must report PostgreSQL 15: pgdict's pglz is held byte-identical to
//! PostgreSQL 15's (`/usr/bin/pg_config` on Debian runs the *newest* installed server-dev
//! package, which is why 3 comes before 4).
//!
//! Nothing found is a build error naming the package to install, never a silent skip: a
//! differential test that quietly compared nothing would be worse than no test.
//!
//! # Which archive, and why the plain one links
//!
//! Debian ships two builds of the same sources: `libpgcommon.a` (for programs) and
//! `libpgcommon_shlib.a` (compiled `-fPIC`, for shared libraries). Rust links test binaries
//! and benches as position-independent executables (PIE), which a non-PIC object can break
//! ("relocation R_X86_64_32 ... can not be used when making a PIE object"). On Debian 12 the
//! plain archive links fine: Debian's GCC builds PIE code by default, so `pg_lzcompress.o`
//! has only PC-relative relocations in `.text` (`R_X86_64_PC32`, `R_X86_64_PLT32`) and two
//! `R_X86_64_64` in `.data.rel.ro` (the `PGLZ_strategy_*` pointers, turned into load-time
//! relative relocations). Checked with `readelf -r`: `pg_lzcompress.o` and
//! `pg_lzcompress_shlib.o` are byte-identical there. So we link `libpgcommon.a`, the archive
//! DESIGN.md names. On a system whose compiler does not default to PIE, point
//! `PGDICT_PGCOMMON_LIB_DIR` at a directory holding the `_shlib` archive renamed to
//! `libpgcommon.a`.
//!
//! Only `pg_lzcompress.o` is pulled from the archive: `nm` shows it defines `pglz_compress`,
//! `pglz_decompress`, `pglz_maximum_compressed_size` and the two strategy pointers, and needs
//! nothing but `memcpy`, `memcmp`, `memset` and `__stack_chk_fail` from libc. The linker takes
//! only the archive members that resolve a symbol, so none of the rest of libpgcommon (which
//! would want OpenSSL, libpgport, ...) comes along.
//!
//! The archive is copied into `OUT_DIR`, so PostgreSQL's library directory (full of extension
//! `.so` files) is not put on every link line of the workspace; there `pg_lzcompress.o` is
//! taken out with `ar`, page-aligned with `objcopy` (see `page_aligned_pglz`: it keeps C's
//! timings from moving with pgdict's code layout) and linked alone. Without `ar` or `objcopy`
//! the build warns and links the copied archive as it is.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{self, Command};

/// The Debian package that ships `libpgcommon.a` and `pg_config` for PostgreSQL 15.
const PACKAGE: &str = "postgresql-server-dev-15";
/// Debian's path of PostgreSQL 15's own `pg_config`.
const DEBIAN_PG15_CONFIG: &str = "/usr/lib/postgresql/15/bin/pg_config";
const ARCHIVE: &str = "libpgcommon.a";
/// The archive member holding PostgreSQL's pglz.
const PGLZ_MEMBER: &str = "pg_lzcompress.o";
/// The library made of that member alone, page-aligned (see `page_aligned_pglz`).
const ALIGNED_LIB: &str = "pgref_pglz";
const ENV_LIB_DIR: &str = "PGDICT_PGCOMMON_LIB_DIR";
const ENV_PG_CONFIG: &str = "PGDICT_PG_CONFIG";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={ENV_LIB_DIR}");
    println!("cargo:rerun-if-env-changed={ENV_PG_CONFIG}");

    let (lib_dir, version, libpq_dir) = locate().unwrap_or_else(|why| fail(&why));
    let archive = lib_dir.join(ARCHIVE);
    if !archive.is_file() {
        fail(&format!("{} does not exist", archive.display()));
    }
    println!("cargo:rerun-if-changed={}", archive.display());

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let link_dir = out_dir.join("pgcommon");
    fs::create_dir_all(&link_dir)
        .and_then(|()| fs::copy(&archive, link_dir.join(ARCHIVE)))
        .unwrap_or_else(|e| {
            fail(&format!(
                "copying {} into {}: {e}",
                archive.display(),
                link_dir.display()
            ))
        });

    println!("cargo:rustc-link-search=native={}", link_dir.display());
    match page_aligned_pglz(&link_dir) {
        Ok(()) => println!("cargo:rustc-link-lib=static={ALIGNED_LIB}"),
        Err(why) => {
            println!(
                "cargo:warning=linking {ARCHIVE} as it is ({why}); C's pglz timings will \
                 move with the layout of the Rust code around it"
            );
            println!("cargo:rustc-link-lib=static=pgcommon");
        }
    }
    // libpq.so, for `libpq::conninfo_parse` (`#[link(name = "pq")]`): where pg_config says,
    // which on Debian is the system's library directory, searched anyway.
    if let Some(dir) = libpq_dir {
        if !dir.join("libpq.so").exists() {
            fail(&format!(
                "{} does not exist (Debian package libpq-dev, which {PACKAGE} depends on)",
                dir.join("libpq.so").display()
            ));
        }
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-env=PGDICT_PGREF_PG_VERSION={version}");
    println!("cargo:rustc-env=PGDICT_PGREF_ARCHIVE={}", archive.display());
}

/// Takes `pg_lzcompress.o` out of the copy of the archive in `dir`, raises the alignment of
/// its code and tables to a page, and puts it alone into `lib{ALIGNED_LIB}.a` there.
///
/// C's pglz then starts at the same offset within a page in every binary, whatever Rust code
/// is linked before it. Unaligned, its place moved with pgdict's own code, and so did its
/// speed: `dict_ratio` measured C's `pglz_decompress` 4-5 % faster or slower after unrelated
/// changes (its start moved by 32 bytes modulo 64), which made every pgdict-vs-C ratio move
/// with code layout rather than with what was changed.
fn page_aligned_pglz(dir: &Path) -> Result<(), String> {
    let tool = |program: &str, args: &[&str]| -> Result<(), String> {
        let output = Command::new(program)
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|e| format!("cannot run `{program}`: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`{program} {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    };
    let aligned = format!("lib{ALIGNED_LIB}.a");
    // `ar r` would add to a stale archive of an earlier build.
    let _ = fs::remove_file(dir.join(&aligned));
    tool("ar", &["x", ARCHIVE, PGLZ_MEMBER])?;
    tool(
        "objcopy",
        &[
            "--set-section-alignment",
            ".text=4096",
            "--set-section-alignment",
            ".bss=4096",
            PGLZ_MEMBER,
        ],
    )?;
    tool("ar", &["crs", &aligned, PGLZ_MEMBER])
}

/// Returns the directory holding `libpgcommon.a`, the PostgreSQL version it belongs to, and
/// the directory holding `libpq.so` (unknown when the archive's directory was given).
fn locate() -> Result<(PathBuf, String, Option<PathBuf>), String> {
    if let Some(dir) = env::var_os(ENV_LIB_DIR).filter(|v| !v.is_empty()) {
        return Ok((
            PathBuf::from(dir),
            format!("unknown (from {ENV_LIB_DIR})"),
            None,
        ));
    }
    let pg_config = match env::var_os(ENV_PG_CONFIG).filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None if Path::new(DEBIAN_PG15_CONFIG).is_file() => PathBuf::from(DEBIAN_PG15_CONFIG),
        None => PathBuf::from("pg_config"),
    };
    let version = run(&pg_config, "--version")?;
    // "PostgreSQL 15.20 (Debian 15.20-0+deb12u1)"
    let major = version
        .strip_prefix("PostgreSQL ")
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next());
    if major != Some("15") {
        return Err(format!(
            "{} reports {version:?}, but pgdict-pgref needs PostgreSQL 15 \
             (set {ENV_PG_CONFIG} to PostgreSQL 15's pg_config)",
            pg_config.display()
        ));
    }
    let lib_dir = run(&pg_config, "--pkglibdir")?;
    let libpq_dir = run(&pg_config, "--libdir")?;
    Ok((
        PathBuf::from(lib_dir),
        version,
        Some(PathBuf::from(libpq_dir)),
    ))
}

/// Runs `pg_config FLAG` and returns its trimmed standard output.
fn run(pg_config: &Path, flag: &str) -> Result<String, String> {
    let output = Command::new(pg_config)
        .arg(flag)
        .output()
        .map_err(|e| format!("cannot run `{} {flag}`: {e}", pg_config.display()))?;
    if !output.status.success() {
        return Err(format!(
            "`{} {flag}` failed ({}): {}",
            pg_config.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    String::from_utf8(output.stdout)
        .map(|s| s.trim().to_owned())
        .map_err(|_| format!("`{} {flag}` printed non-UTF-8", pg_config.display()))
}

fn fail(why: &str) -> ! {
    eprintln!(
        "\n\
         error: pgdict-pgref cannot find PostgreSQL 15's {ARCHIVE}: {why}\n\
         \n\
         pgdict's tests and benchmarks compare against PostgreSQL's own C pglz, which lives in\n\
         {ARCHIVE} from the Debian package `{PACKAGE}`. Install it:\n\
         \n\
         \x20   apt-get install -y {PACKAGE}\n\
         \n\
         or point the build at it: {ENV_PG_CONFIG}=/path/to/pg_config (PostgreSQL 15), or\n\
         {ENV_LIB_DIR}=/directory/holding/{ARCHIVE}.\n"
    );
    process::exit(1);
}
