//! Writing a snapshot file so that a reader never sees half of one.

use std::io;
use std::path::Path;

use super::snapshot::Snapshot;

/// Writes `snapshot` to a temporary file beside `path`, syncs it and
/// renames it over `path`: a reader (nginx's refresh, replay) sees the old
/// file or the new one, never a part. The error names the file.
pub fn write_atomically(path: &Path, snapshot: &Snapshot) -> Result<(), String> {
    let name = path.display();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| format!("{name}: not a file name"))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let write = || -> io::Result<()> {
        let mut f = io::BufWriter::new(std::fs::File::create(&tmp)?);
        snapshot.write(&mut f)?;
        let f = f.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{name}: {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_whole_and_leaves_no_temporary() {
        let dir =
            std::env::temp_dir().join(format!("edgeguard-signals-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, &Snapshot::new(5, 60)).unwrap();
        let back = Snapshot::load(&path).unwrap();
        assert_eq!((back.generated(), back.window(), back.len()), (5, 60, 0));
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("s.json")]);
        let e = write_atomically(&dir.join("missing/s.json"), &Snapshot::new(5, 60)).unwrap_err();
        assert!(e.contains("missing/s.json"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
