//! Dictionary builders: the bytes a codec reads as history before each datum.
//!
//! Two builders share one interface, [`Builder::build`]`(samples, codec, size)`:
//!
//! - [`Builder::Zstd`], the baseline: zstd's own trainer (ZDICT, `zstd::dict::from_samples`).
//!   ZDICT writes its entropy tables first and its most valuable content last, so for pglz and
//!   lz4 the baseline keeps the end of the trained dictionary, all their window reaches (see
//!   [`zstd`] for which size it trains at).
//! - [`Builder::Pgdict`], pgdict's own builder, which knows each codec's window and match rules
//!   and checks its candidates with the real codec; see [`pgdict`].
//!
//! Both return at most `size` bytes (for pglz at most [`pglz::DICT_WINDOW`], the bytes a
//! match can reach) and never an empty dictionary: when the samples hold nothing worth a
//! dictionary the result is [`BuildError::NothingToLearn`].

pub mod kmer;
pub mod parse;
pub mod pgdict;
pub mod probe;
pub mod select;
pub mod zstd;

use ::pgdict::datum::Codec;
use ::pgdict::pglz;

/// Which builder makes a dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builder {
    /// zstd's trainer (ZDICT), its content cut to the codec's window: the baseline.
    Zstd,
    /// pgdict's codec-aware builder.
    Pgdict,
}

impl Builder {
    /// Both builders, baseline first.
    pub const ALL: [Builder; 2] = [Builder::Zstd, Builder::Pgdict];

    /// The builder's name, as `--builder` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Builder::Zstd => "zstd",
            Builder::Pgdict => "pgdict",
        }
    }

    /// The builder `--builder` names.
    pub fn from_name(name: &str) -> Option<Builder> {
        Builder::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The builder that really builds for `codec`: pgdict's builder leaves zstd's dictionaries
    /// to zstd's trainer, which is made for zstd's format (entropy tables and content), so a
    /// zstd dictionary is always zstd's trainer's. Reports and stored metadata name this one.
    pub fn for_codec(self, codec: Codec) -> Builder {
        match codec {
            Codec::Zstd => Builder::Zstd,
            Codec::Pglz | Codec::Lz4 => self,
        }
    }

    /// The smallest size this builder builds a dictionary for `codec` at: 1 byte, except
    /// where zstd's trainer makes the dictionary at that size ([`zstd::MIN_TRAIN_SIZE`]).
    pub fn min_size(self, codec: Codec) -> usize {
        match (self.for_codec(codec), codec) {
            (Builder::Zstd, Codec::Lz4 | Codec::Zstd) => zstd::MIN_TRAIN_SIZE,
            _ => 1,
        }
    }

    /// Builds a dictionary of at most `size` bytes for `codec` from `samples` (the training
    /// rows, one datum each), with [`Builder::for_codec`].
    pub fn build<S: AsRef<[u8]>>(
        self,
        samples: &[S],
        codec: Codec,
        size: usize,
    ) -> Result<Vec<u8>, BuildError> {
        self.build_noting(samples, codec, size, &|_| {})
    }

    /// [`Builder::build`], telling `note` what the build is doing as each of its stages
    /// begins (pgdict's builder: counting, seeding, refining, ...; zstd's trainer says
    /// nothing): for a progress display, on the calling thread.
    pub fn build_noting<S: AsRef<[u8]>>(
        self,
        samples: &[S],
        codec: Codec,
        size: usize,
        note: &dyn Fn(&str),
    ) -> Result<Vec<u8>, BuildError> {
        check_input(samples, size)?;
        let dict = match self.for_codec(codec) {
            Builder::Zstd => zstd::build(samples, codec, size)?,
            Builder::Pgdict => {
                pgdict::PgdictBuilder::default().build_noting(samples, codec, size, note)?
            }
        };
        if dict.is_empty() {
            return Err(BuildError::NothingToLearn {
                rows: samples.len(),
                size,
            });
        }
        Ok(dict)
    }
}

impl std::fmt::Display for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The most dictionary bytes `codec` can use: pglz reaches 4095 bytes back, lz4 64 KiB, and
/// zstd any number (its dictionaries are capped only by what is sensible to keep in memory).
pub fn max_useful_size(codec: Codec) -> usize {
    match codec {
        Codec::Pglz => pglz::DICT_WINDOW,
        Codec::Lz4 => ::pgdict::lz4::DICT_WINDOW,
        Codec::Zstd => usize::MAX,
    }
}

/// Why no dictionary was built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// There were no samples, or all of them were empty.
    #[error("no sample rows to build a dictionary from")]
    NoSamples,
    /// The requested size is 0.
    #[error("a dictionary of 0 bytes was asked for")]
    ZeroSize,
    /// The samples hold no content that repeats across rows.
    #[error(
        "{}",
        if *.rows == 1 {
            "there is one row to train on: a dictionary holds what rows share, so it needs two \
             or more (thousands are best)"
                .to_string()
        } else {
            format!(
                "the {rows} sample rows share no content worth a dictionary of {size} bytes \
                 (nothing that repeats across rows fits in it)"
            )
        }
    )]
    NothingToLearn {
        /// How many sample rows there were.
        rows: usize,
        /// The dictionary size asked for.
        size: usize,
    },
    /// A size under the least zstd's trainer makes ([`zstd::MIN_TRAIN_SIZE`]).
    #[error(
        "zstd's trainer makes dictionaries of {} bytes or more, and {size} were asked for",
        zstd::MIN_TRAIN_SIZE
    )]
    TooSmallForZstd {
        /// The dictionary size asked for.
        size: usize,
    },
    /// Too few rows for zstd's trainer ([`zstd::MIN_ROWS`]).
    #[error(
        "zstd's trainer needs {} rows or more (it tries its choices on a quarter of them), and \
         there {}",
        zstd::MIN_ROWS,
        if *.rows == 1 { "is 1".to_string() } else { format!("are {rows}") }
    )]
    TooFewRowsForZstd {
        /// How many sample rows there were.
        rows: usize,
    },
    /// zstd's trainer failed (it needs a minimum of sample bytes and rows).
    #[error(
        "zstd's trainer failed on {} ({bytes} bytes): {message}",
        crate::progress::counted(*.rows as u64, "row")
    )]
    Zstd {
        /// How many sample rows there were.
        rows: usize,
        /// Their total size.
        bytes: usize,
        /// What zstd said.
        message: String,
    },
}

fn check_input<S: AsRef<[u8]>>(samples: &[S], size: usize) -> Result<(), BuildError> {
    if size == 0 {
        return Err(BuildError::ZeroSize);
    }
    if samples.iter().all(|s| s.as_ref().is_empty()) {
        return Err(BuildError::NoSamples);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_by_name_and_by_codec() {
        for builder in Builder::ALL {
            assert_eq!(Builder::from_name(builder.name()), Some(builder));
            assert_eq!(builder.to_string(), builder.name());
            // zstd's dictionaries are always zstd's trainer's.
            assert_eq!(builder.for_codec(Codec::Zstd), Builder::Zstd);
            assert_eq!(builder.for_codec(Codec::Pglz), builder);
            assert_eq!(builder.for_codec(Codec::Lz4), builder);
        }
        assert_eq!(Builder::from_name("pgdict"), Some(Builder::Pgdict));
        assert_eq!(Builder::from_name("cover"), None);
        // zstd's trainer has a least size wherever it makes the dictionary itself.
        assert_eq!(Builder::Zstd.min_size(Codec::Lz4), zstd::MIN_TRAIN_SIZE);
        assert_eq!(Builder::Pgdict.min_size(Codec::Zstd), zstd::MIN_TRAIN_SIZE);
        assert_eq!(Builder::Pgdict.min_size(Codec::Lz4), 1);
        assert_eq!(Builder::Pgdict.min_size(Codec::Pglz), 1);
        assert_eq!(max_useful_size(Codec::Pglz), 4095);
        assert_eq!(max_useful_size(Codec::Lz4), 65536);
        assert_eq!(max_useful_size(Codec::Zstd), usize::MAX);
    }

    #[test]
    fn nothing_to_build_from_is_an_error() {
        let rows: Vec<Vec<u8>> = (0..50)
            .map(|i| format!("{{\"kind\":\"airport\",\"id\":{i}}}").into_bytes())
            .collect();
        let empty: [&[u8]; 2] = [b"", b""];
        for builder in Builder::ALL {
            for codec in [Codec::Pglz, Codec::Lz4] {
                let size = 4096;
                assert!(matches!(
                    builder.build(&rows, codec, 0),
                    Err(BuildError::ZeroSize)
                ));
                assert!(matches!(
                    builder.build(&empty, codec, size),
                    Err(BuildError::NoSamples)
                ));
            }
        }
        // Rows sharing content: a dictionary within the size asked for.
        let dict = Builder::Pgdict.build(&rows, Codec::Pglz, 100).unwrap();
        assert!((1..=100).contains(&dict.len()), "{}", dict.len());
        // One row shares nothing with another.
        assert!(matches!(
            Builder::Pgdict.build(&rows[..1], Codec::Pglz, 4096),
            Err(BuildError::NothingToLearn { rows: 1, .. })
        ));
    }
}
