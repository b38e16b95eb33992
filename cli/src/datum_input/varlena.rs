//! Varlenas back to back: each datum as long as its own header says.

use std::io::{self, Read};

use anyhow::Context;

use pgdict::datum;

use super::{Datum, Position};

/// Varlenas back to back, each as long as its header says.
pub(super) struct Varlenas<R> {
    pub(super) input: R,
    /// Bytes read past the last datum: the next datum's first bytes.
    pending: Vec<u8>,
    /// Byte offset of the next datum.
    pub(super) offset: u64,
}

impl<R: Read> Varlenas<R> {
    pub(super) fn new(input: R) -> Varlenas<R> {
        Varlenas {
            input,
            pending: Vec::with_capacity(datum::MAX_HEADER_LEN),
            offset: 0,
        }
    }

    pub(super) fn next_datum(&mut self) -> anyhow::Result<Option<Datum>> {
        // Bytes until the header reads (at most the longest header; fewer at the end of the
        // input). No more: a byte past this datum may not have come yet, and waiting for it
        // would hold this datum back.
        let mut chunk = [0u8; datum::MAX_HEADER_LEN];
        while self.pending.len() < datum::MAX_HEADER_LEN
            && (self.pending.is_empty() || datum::read_header(&self.pending).is_err())
        {
            let wanted = datum::MAX_HEADER_LEN - self.pending.len();
            let read = read_some(&mut self.input, &mut chunk[..wanted])
                .with_context(|| format!("cannot read the varlena at byte {}", self.offset))?;
            if read == 0 {
                break;
            }
            self.pending.extend_from_slice(&chunk[..read]);
        }
        if self.pending.is_empty() {
            return Ok(None);
        }
        let offset = self.offset;
        let header = datum::read_header(&self.pending)
            .with_context(|| format!("varlena at byte {offset}"))?;
        let total_len = header.total_len;
        let bytes = if total_len <= self.pending.len() {
            let rest = self.pending.split_off(total_len);
            std::mem::replace(&mut self.pending, rest)
        } else {
            // Grows as bytes arrive: a damaged header cannot make this allocate 1 GiB.
            let mut bytes = std::mem::take(&mut self.pending);
            let wanted = (total_len - bytes.len()) as u64;
            (&mut self.input)
                .take(wanted)
                .read_to_end(&mut bytes)
                .with_context(|| format!("cannot read the varlena at byte {offset}"))?;
            if bytes.len() < total_len {
                anyhow::bail!(
                    "the varlena at byte {offset} says it is {total_len} bytes long, but only {} \
                     bytes are left",
                    bytes.len()
                );
            }
            bytes
        };
        self.offset += total_len as u64;
        Ok(Some(Datum {
            bytes,
            position: Position::Byte(offset),
        }))
    }
}

/// One `read` of `input`, tried again if a signal interrupted it.
fn read_some(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match input.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            result => return result,
        }
    }
}
