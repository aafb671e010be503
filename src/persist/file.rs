//! Crash-safe saving to a path, and loading from one.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use super::{Decoder, Saved};
use crate::error::{READING, SAVING};
use crate::Error;

/// Saves `value` to `path` so that a crash at any instant leaves either the
/// previous file or the new one there, whole: write a temporary file in the
/// same directory, fsync it, rename it over `path`, fsync the directory.
pub(crate) fn save<V: Saved>(value: &V, path: &Path) -> Result<(), Error> {
    save_steps(value, path).map_err(|error| error.on_file(SAVING, path))
}

fn save_steps<V: Saved>(value: &V, path: &Path) -> Result<(), Error> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        Error::from(crate::IoError::from(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path names no file",
        )))
    })?;
    // Saves running at once get different names; `create_new` refuses a
    // clash rather than clobber another save's file.
    let save_number = crate::hash::unlikely_to_repeat();
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.{save_number:016x}.tmp", std::process::id()));
    let temporary = directory.join(temporary_name);
    let written = write_synced(value, &temporary).and_then(|()| {
        fs::rename(&temporary, path)?;
        sync_directory(&directory)
    });
    if written.is_err() {
        // The previous file is untouched; the temporary one is garbage.
        let _ = fs::remove_file(&temporary);
    }
    written
}

fn write_synced<V: Saved>(value: &V, temporary: &Path) -> Result<(), Error> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(temporary)?;
    let writer = super::write_to(value, BufWriter::new(file))?;
    let file = writer.into_inner().map_err(|error| error.into_error())?;
    file.sync_all()?;
    Ok(())
}

/// Makes the rename durable: on Unix a directory's entries are synced
/// through the directory itself. Elsewhere the rename is left to the OS.
fn sync_directory(directory: &Path) -> Result<(), Error> {
    #[cfg(unix)]
    File::open(directory)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = directory;
    Ok(())
}

/// Loads a `V` from `path`, which must hold nothing after it.
pub(crate) fn load<V: Saved>(path: &Path) -> Result<V, Error> {
    let read = || {
        let mut reader = BufReader::new(File::open(path)?);
        let value = super::read_from(&mut reader)?;
        Decoder::new(reader).expect_end()?;
        Ok(value)
    };
    read().map_err(|error: Error| error.on_file(READING, path))
}
