//! Reading a model file into memory.
//!
//! A large model is read in two halves on two threads, each straight into
//! its half of one buffer sized from the file's length: copying 12 MB out
//! of the page cache, and faulting in the pages it lands on, is then shared
//! by two cores. Small files are read as `std::fs::read` reads them.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The size from which [`read`] reads a file in two halves on two threads.
/// Below it, starting a thread costs about what the second half saves
/// (reading 1 MB from the page cache takes ~0.3 ms).
pub const PARALLEL_READ_MIN_BYTES: u64 = 4 << 20;

/// The file's whole content, as `std::fs::read` gives it; a file of
/// [`PARALLEL_READ_MIN_BYTES`] or more is read in two halves on two threads
/// (on Unix; elsewhere in one read).
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len >= PARALLEL_READ_MIN_BYTES {
        if let Some(bytes) = halves(&file, len) {
            return Ok(bytes);
        }
        // Something changed under us (the file shrank, a read failed):
        // read it again from the start, as one read, and report what that says.
        return std::fs::read(path);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The file read in two halves on two threads, then on to its end (it may
/// have grown since its length was taken); `None` when a half cannot be
/// read whole.
#[cfg(unix)]
fn halves(file: &File, len: u64) -> Option<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(len).ok()?;
    // Zeroed memory comes from the OS untouched: its pages are faulted in
    // by the reads that fill them, each half by its own thread.
    let mut bytes = vec![0u8; len];
    let mid = len / 2;
    let (first, second) = bytes.split_at_mut(mid);
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| file.read_exact_at(second, mid as u64));
        let a = file.read_exact_at(first, 0);
        (a, b.join())
    });
    if a.is_err() || !matches!(b, Ok(Ok(()))) {
        return None;
    }
    let mut file = file;
    file.seek(SeekFrom::Start(len as u64)).ok()?;
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(not(unix))]
fn halves(_file: &File, _len: u64) -> Option<Vec<u8>> {
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
        assert_eq!(read(&path).expect("readable"), content);
        let small = dir.path().join("small.bpmn");
        std::fs::write(&small, &content[..1000]).expect("written");
        assert_eq!(read(&small).expect("readable"), &content[..1000]);
        let empty = dir.path().join("empty.bpmn");
        std::fs::write(&empty, b"").expect("written");
        assert_eq!(read(&empty).expect("readable"), b"");
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
