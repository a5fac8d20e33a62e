//! Reading a model file into memory.
//!
//! A large model is read in two halves on two threads, each straight into
//! its half of one buffer sized from the file's length: copying 12 MB out
//! of the page cache, and faulting in the pages it lands on, is then shared
//! by two cores. Small files are read as `std::fs::read` reads them.
//!
//! The large buffer is an anonymous mapping the kernel is asked to back
//! with transparent huge pages (`madvise(MADV_HUGEPAGE)`, through memmap2's
//! safe API): 12 MB is then six 2 MB page faults instead of ~3,200 4 KB
//! ones, and the parser's walk over it misses the TLB less. Where the
//! kernel has no huge pages to give (THP off, or none free), the advice is
//! ignored and the pages are ordinary ones, as with a `Vec`.

mod name;

pub use name::{is_model_file, is_model_name, model_stem, MODEL_SUFFIXES};

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The size from which [`read`] reads a file in two halves on two threads.
/// Below it, starting a thread costs about what the second half saves
/// (reading 1 MB from the page cache takes ~0.3 ms).
pub const PARALLEL_READ_MIN_BYTES: u64 = 4 << 20;

/// A file's bytes, as [`read`] gives them: they deref to `[u8]`.
pub struct FileBytes(Buffer);

enum Buffer {
    Vec(Vec<u8>),
    /// A huge-page-advised anonymous mapping the size of the file.
    #[cfg(unix)]
    Mapped(memmap2::MmapMut),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Buffer::Vec(v) => v,
            #[cfg(unix)]
            Buffer::Mapped(map) => map,
        }
    }
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileBytes({} bytes)", self.len())
    }
}

/// The file's whole content, as `std::fs::read` gives it; a file of
/// [`PARALLEL_READ_MIN_BYTES`] or more is read in two halves on two threads
/// into huge pages (on Unix; elsewhere in one read).
pub fn read(path: &Path) -> std::io::Result<FileBytes> {
    let mut file = File::open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len >= PARALLEL_READ_MIN_BYTES {
        if let Some(bytes) = halves(&file, len) {
            return Ok(bytes);
        }
        // Something changed under us (the file shrank or grew, a read
        // failed): read it again from the start, as one read, and report
        // what that says.
        return std::fs::read(path).map(|v| FileBytes(Buffer::Vec(v)));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(FileBytes(Buffer::Vec(bytes)))
}

/// The file read in two halves on two threads; `None` when a half cannot
/// be read whole, or the file no longer ends where its length said.
#[cfg(unix)]
fn halves(file: &File, len: u64) -> Option<FileBytes> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(len).ok()?;
    // Fresh anonymous memory is untouched: its pages are faulted in by
    // the reads that fill them, each half by its own thread.
    let mut map = memmap2::MmapMut::map_anon(len).ok()?;
    // Advice only: refused (no THP in this kernel), the pages are 4 KB.
    let _ = map.advise(memmap2::Advice::HugePage);
    let mid = len / 2;
    let (first, second) = map.split_at_mut(mid);
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| file.read_exact_at(second, mid as u64));
        let a = file.read_exact_at(first, 0);
        (a, b.join())
    });
    if a.is_err() || !matches!(b, Ok(Ok(()))) {
        return None;
    }
    // It grew since its length was taken: read it whole again.
    let mut probe = [0u8; 1];
    if file.read_at(&mut probe, len as u64).ok()? != 0 {
        return None;
    }
    Some(FileBytes(Buffer::Mapped(map)))
}

#[cfg(not(unix))]
fn halves(_file: &File, _len: u64) -> Option<FileBytes> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_file_reads_whole_and_in_order() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // Odd length, and a pattern that shows any half out of place.
        let len = PARALLEL_READ_MIN_BYTES as usize + 12_345;
        let content: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let path = dir.path().join("large.bpmn");
        std::fs::write(&path, &content).expect("written");
        assert_eq!(&*read(&path).expect("readable"), &content[..]);
        let small = dir.path().join("small.bpmn");
        std::fs::write(&small, &content[..1000]).expect("written");
        assert_eq!(&*read(&small).expect("readable"), &content[..1000]);
        let empty = dir.path().join("empty.bpmn");
        std::fs::write(&empty, b"").expect("written");
        assert_eq!(&*read(&empty).expect("readable"), b"");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_grew_or_shrank_since_its_length_was_taken_is_read_again() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let len = PARALLEL_READ_MIN_BYTES as usize + 7;
        let content: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        let path = dir.path().join("moving.bpmn");
        std::fs::write(&path, &content).expect("written");
        let file = File::open(&path).expect("open");
        // Its length was taken when it was shorter: it grew.
        assert!(halves(&file, len as u64 - 3).is_none());
        // Its length was taken when it was longer: it shrank.
        assert!(halves(&file, len as u64 + 3).is_none());
        assert_eq!(&*halves(&file, len as u64).expect("whole"), &content[..]);
    }

    #[test]
    fn a_missing_file_or_a_directory_is_an_error_as_std_gives_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let missing = dir.path().join("missing.bpmn");
        assert_eq!(
            read(&missing).unwrap_err().kind(),
            std::fs::read(&missing).unwrap_err().kind()
        );
        assert_eq!(
            read(dir.path()).unwrap_err().kind(),
            std::fs::read(dir.path()).unwrap_err().kind()
        );
    }
}
