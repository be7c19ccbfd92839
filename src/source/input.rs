//! The bytes of an input: a file, the files of a directory, or stdin, gzip-compressed or not,
//! within the limit on one input, in memory that follows what was read. A buffer grows by bounded
//! steps, checked against the limit before it grows, and an allocation that fails is an error,
//! never an abort. A plain file larger than the limit is refused before it is read. Gzip data is
//! decompressed as it is read; when it expands past what is worth keeping before its size is
//! known, the rest is only counted, so a gzip bomb is refused having held little, and an input
//! within the limit is decompressed again into a buffer of the size found.
//! Stdin is copied as it comes into an unnamed temporary file, so that it can be streamed and
//! still be read whole when streaming gives up.

use super::load_error::LoadError;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The most one input may hold once read and decompressed, unless raised: about 8× the snapshot
/// of the largest cluster Kubernetes supports (5,000 nodes and 150,000 pods, 147 MB of JSON), so
/// a gzip bomb or an endless stream ends in an error, not in exhausting memory.
pub const DEFAULT_MAX_INPUT: u64 = 1 << 30;

/// Bounds on what reading an input may cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one input, after decompression.
    pub max_input: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_input: DEFAULT_MAX_INPUT,
        }
    }
}

/// Bytes read (or decompressed) at a time.
const CHUNK: usize = 64 << 10;
/// The most a buffer of unknown final size grows by at once: what it may hold beyond what was
/// read. Below it, a buffer doubles.
const STEP: usize = 64 << 20;
/// Decompressed bytes kept while their total is unknown. Most inputs end before it and are
/// decompressed once; past it, the rest is only counted.
const KEPT: usize = 64 << 20;

/// A byte count as a quantity a person reads and `--max-input-size` takes back (`1Gi`, `1500Mi`).
pub fn human_bytes(n: u64) -> String {
    for (suffix, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{}{suffix}", n >> shift);
        }
    }
    n.to_string()
}

/// One input being read: its name in messages, its limit, and how much decompressed data it keeps
/// while the total is unknown.
struct Input<'a> {
    name: &'a str,
    limits: Limits,
    keep: usize,
}

impl<'a> Input<'a> {
    fn new(name: &'a str, limits: Limits) -> Input<'a> {
        Input {
            name,
            limits,
            keep: KEPT,
        }
    }

    fn content(&self, message: String) -> LoadError {
        LoadError::Content {
            path: self.name.to_string(),
            message,
        }
    }

    fn io(&self, source: std::io::Error) -> LoadError {
        LoadError::Io {
            path: self.name.to_string(),
            source,
        }
    }

    fn too_large(&self) -> LoadError {
        self.content(format!(
            "holds more than {}, the limit for one input (--max-input-size raises it)",
            human_bytes(self.limits.max_input)
        ))
    }

    fn expands_too_far(&self) -> LoadError {
        self.content(format!(
            "expands past {} when decompressed, the limit for one input (--max-input-size raises it)",
            human_bytes(self.limits.max_input)
        ))
    }

    fn gzip(&self, e: std::io::Error) -> LoadError {
        self.content(format!("cannot decompress gzip data: {e}"))
    }

    fn out_of_memory(&self, held: usize) -> LoadError {
        self.content(format!(
            "cannot hold it in memory: out of memory after reading {held} bytes of it"
        ))
    }

    /// Room in `buf` for `more` bytes: it grows by what it holds, at most `STEP`, never past the
    /// limit, and not at all when it has the room.
    fn grow(&self, buf: &mut Vec<u8>, more: usize) -> Result<(), LoadError> {
        if buf.capacity() - buf.len() >= more {
            return Ok(());
        }
        let room = usize::try_from(self.limits.max_input)
            .unwrap_or(usize::MAX)
            .saturating_sub(buf.len());
        let step = buf.len().clamp(CHUNK, STEP).min(room).max(more);
        buf.try_reserve_exact(step)
            .map_err(|_| self.out_of_memory(buf.len()))
    }

    /// Appends `bytes`, refusing what would take `buf` past the limit.
    fn append(
        &self,
        buf: &mut Vec<u8>,
        bytes: &[u8],
        past_limit: fn(&Self) -> LoadError,
    ) -> Result<(), LoadError> {
        if (buf.len() + bytes.len()) as u64 > self.limits.max_input {
            return Err(past_limit(self));
        }
        self.grow(buf, bytes.len())?;
        buf.extend_from_slice(bytes);
        Ok(())
    }
}

/// Reads chunk by chunk, retrying an interrupted read; `Ok(0)` at the end.
pub(super) fn read_chunk(
    reader: &mut (impl Read + ?Sized),
    chunk: &mut [u8],
) -> std::io::Result<usize> {
    loop {
        match reader.read(chunk) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Whether the bytes start as gzip data does, whatever the name.
fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// Whether a file starts as gzip data does; left at its start.
fn starts_as_gzip(file: &mut (impl Read + Seek)) -> std::io::Result<bool> {
    let mut head = [0u8; 2];
    file.rewind()?;
    let n = Read::take(&mut *file, 2).read(&mut head)?;
    file.rewind()?;
    Ok(is_gzip(&head[..n]))
}

/// What stdin is called in messages.
pub(super) const STDIN: &str = "<stdin>";

/// Stdin, whole and decompressed.
pub fn read_stdin(limits: Limits) -> Result<Vec<u8>, LoadError> {
    Input::new(STDIN, limits).read_unsized(&mut std::io::stdin().lock())
}

/// Stdin, ready to be read twice: as it streams, then whole if the stream is given up.
pub(super) enum Stdin {
    /// Kept as it came (compressed or not) in an unnamed temporary file, which is gone with the
    /// process, however it ends.
    Spooled(Spooled),
    /// Whole and decompressed, as `read_stdin` reads it: no temporary file could be had, or its
    /// disk filled up.
    Read(Vec<u8>),
}

/// Stdin kept in a temporary file.
pub(super) struct Spooled {
    file: File,
    limits: Limits,
}

impl Spooled {
    /// As `stream_file` streams a regular file.
    pub(super) fn stream(&self) -> Option<Box<dyn Read + '_>> {
        let len = self.file.metadata().ok()?.len();
        stream_opened(&self.file, len, self.limits)
    }

    /// Whole and decompressed, with the errors `read_stdin` gives.
    pub(super) fn read(&self) -> Result<Vec<u8>, LoadError> {
        let input = Input::new(STDIN, self.limits);
        let len = self.file.metadata().map_err(|e| input.io(e))?.len();
        input.read_sized(&self.file, len)
    }
}

/// Stdin, spooled to a temporary file within the limit on one input (the bytes as they come, so
/// a gzip bomb costs its compressed size on disk and is refused as it streams), or whole in
/// memory when that cannot be.
pub(super) fn spool_stdin(limits: Limits) -> Result<Stdin, LoadError> {
    let input = Input::new(STDIN, limits);
    let mut stdin = std::io::stdin().lock();
    let Ok(file) = tempfile::tempfile() else {
        return input.read_unsized(&mut stdin).map(Stdin::Read);
    };
    Ok(match input.spool(&mut stdin, file)? {
        Ok(file) => Stdin::Spooled(Spooled { file, limits }),
        Err(bytes) => Stdin::Read(bytes),
    })
}

/// In-memory content (`name` labels it in messages), decompressed when it is gzip data.
pub fn read_bytes(name: &str, bytes: Vec<u8>, limits: Limits) -> Result<Vec<u8>, LoadError> {
    Input::new(name, limits).decompressed(bytes)
}

/// A regular file as a stream of its bytes, decompressed when it is gzip data, for a reader that
/// keeps only what it needs of them; `None` for anything else (a pipe, a device, a file that
/// cannot be opened, a plain file past the limit), which is read whole.
pub(super) fn stream_file(path: &str, limits: Limits) -> Option<Box<dyn Read>> {
    // Before opening: opening a named pipe only to close it again could cost its writer the
    // data (or its life, by SIGPIPE) before the general path opens it for real.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    stream_opened(file, len, limits)
}

/// A regular file of `len` bytes, from its start, as `stream_file` streams it.
fn stream_opened<'f>(
    mut file: impl Read + Seek + 'f,
    len: u64,
    limits: Limits,
) -> Option<Box<dyn Read + 'f>> {
    if starts_as_gzip(&mut file).ok()? {
        return Some(Box::new(flate2::read::MultiGzDecoder::new(file)));
    }
    // Refused before it is read, as `read_file` refuses it.
    (len <= limits.max_input).then(|| Box::new(file) as Box<dyn Read + 'f>)
}

/// A file, whole and decompressed.
pub fn read_file(path: &str, limits: Limits) -> Result<Vec<u8>, LoadError> {
    let input = Input::new(path, limits);
    let mut file = File::open(path).map_err(|e| input.io(e))?;
    let meta = file.metadata().map_err(|e| input.io(e))?;
    if !meta.is_file() {
        // A pipe or a device: read as a stream is.
        return input.read_unsized(&mut file);
    }
    input.read_sized(file, meta.len())
}

impl Input<'_> {
    /// A stream of unknown length, whole and decompressed.
    fn read_unsized(&self, reader: &mut impl Read) -> Result<Vec<u8>, LoadError> {
        let raw = self.read_stream(reader, Vec::new())?;
        self.decompressed(raw)
    }

    /// A regular file of `len` bytes, from its start, whole and decompressed.
    fn read_sized(&self, mut file: impl Read + Seek, len: u64) -> Result<Vec<u8>, LoadError> {
        if starts_as_gzip(&mut file).map_err(|e| self.io(e))? {
            return self.gunzip(file);
        }
        if len > self.limits.max_input {
            return Err(self.too_large());
        }
        // The size is known: one allocation, and the stream's growth only if the file grows.
        let mut buf = Vec::new();
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        buf.try_reserve_exact(len)
            .map_err(|_| self.out_of_memory(0))?;
        self.read_stream(&mut file, buf)
    }

    /// Copies `reader` into `spool`, refusing it past the limit as `read_stream` does. When
    /// `spool` refuses a write (its disk is full), `Err` with what it held and the rest of
    /// `reader`, whole and decompressed, as `read_unsized` reads them.
    fn spool<S: Read + Write + Seek>(
        &self,
        reader: &mut impl Read,
        mut spool: S,
    ) -> Result<Result<S, Vec<u8>>, LoadError> {
        let mut chunk = vec![0u8; CHUNK];
        let mut held = 0u64;
        loop {
            let n = read_chunk(reader, &mut chunk).map_err(|e| self.io(e))?;
            if n == 0 {
                return Ok(Ok(spool));
            }
            if held + n as u64 > self.limits.max_input {
                return Err(self.too_large());
            }
            if spool.write_all(&chunk[..n]).is_ok() {
                held += n as u64;
                continue;
            }
            spool.rewind().map_err(|e| self.io(e))?;
            let mut raw = self.read_stream(&mut spool.take(held), Vec::new())?;
            if raw.len() as u64 != held {
                return Err(self.io(std::io::ErrorKind::UnexpectedEof.into()));
            }
            self.append(&mut raw, &chunk[..n], Input::too_large)?;
            let raw = self.read_stream(reader, raw)?;
            return self.decompressed(raw).map(Err);
        }
    }

    /// A stream of unknown length (stdin, a pipe, a device), whole, within the limit.
    fn read_stream(&self, reader: &mut impl Read, mut buf: Vec<u8>) -> Result<Vec<u8>, LoadError> {
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = read_chunk(reader, &mut chunk).map_err(|e| self.io(e))?;
            if n == 0 {
                return Ok(buf);
            }
            self.append(&mut buf, &chunk[..n], Input::too_large)?;
        }
    }

    fn decompressed(&self, raw: Vec<u8>) -> Result<Vec<u8>, LoadError> {
        if is_gzip(&raw) {
            return self.gunzip(std::io::Cursor::new(&raw[..]));
        }
        if raw.len() as u64 > self.limits.max_input {
            return Err(self.too_large());
        }
        Ok(raw)
    }

    /// Gzip data from its start, decompressed whole, within the limit. Up to `keep` bytes are
    /// kept as they come; past that, the rest is only counted, and the data is decompressed
    /// again into a buffer of the size found, or refused, having held little, when the count
    /// passes the limit.
    fn gunzip<R: Read + Seek>(&self, mut source: R) -> Result<Vec<u8>, LoadError> {
        let mut chunk = vec![0u8; CHUNK];
        let mut kept = Some(Vec::new());
        let mut total = 0u64;
        let mut decoder = flate2::read::MultiGzDecoder::new(&mut source);
        loop {
            let n = read_chunk(&mut decoder, &mut chunk).map_err(|e| self.gzip(e))?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > self.limits.max_input {
                return Err(self.expands_too_far());
            }
            match &mut kept {
                Some(buf) if buf.len() + n <= self.keep => {
                    self.append(buf, &chunk[..n], Input::expands_too_far)?
                }
                _ => kept = None,
            }
        }
        drop(decoder);
        if let Some(buf) = kept {
            return Ok(buf);
        }
        source.rewind().map_err(|e| self.io(e))?;
        let size = usize::try_from(total).map_err(|_| self.expands_too_far())?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(size)
            .map_err(|_| self.out_of_memory(0))?;
        let changed = || self.content("changed while it was read".into());
        let mut decoder = flate2::read::MultiGzDecoder::new(source);
        loop {
            let n = read_chunk(&mut decoder, &mut chunk).map_err(|e| self.gzip(e))?;
            if n == 0 {
                break;
            }
            if buf.len() + n > size {
                return Err(changed());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        if buf.len() != size {
            return Err(changed());
        }
        Ok(buf)
    }
}

/// The files a `--snapshot` path stands for: itself, or the `.yaml`, `.yml` and `.json` files
/// (optionally `.gz`) of a directory, by name.
pub fn files_under(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let io = |path: &Path, source| LoadError::Io {
        path: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(|e| io(path, e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| io(path, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let p = entry.map_err(|e| io(path, e))?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let name = name.strip_suffix(".gz").unwrap_or(name);
        if !(name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json")) {
            continue;
        }
        // A file that should be part of the snapshot and cannot be read (a dangling link, a
        // loop, a pipe) would silently leave its objects out of every answer.
        match std::fs::metadata(&p) {
            Ok(m) if m.is_file() => files.push(p),
            Ok(_) => {
                return Err(LoadError::Content {
                    path: p.display().to_string(),
                    message: "not a regular file".into(),
                });
            }
            Err(e) => return Err(io(&p, e)),
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(LoadError::Content {
            path: path.display().to_string(),
            message: "no .yaml, .yml or .json files (optionally .gz) in this directory".into(),
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn inputs_are_read_within_the_limit() {
        let limits = Limits { max_input: 10 };
        assert_eq!(
            read_bytes("x", b"0123456789".to_vec(), limits)
                .unwrap()
                .len(),
            10
        );
        let err = read_bytes("x", b"0123456789a".to_vec(), limits).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x: holds more than 10, the limit for one input (--max-input-size raises it)"
        );
        let err = read_bytes("b.gz", gzip(&[b' '; 4096]), Limits { max_input: 2048 }).unwrap_err();
        assert!(
            err.to_string()
                .contains("expands past 2Ki when decompressed"),
            "{err}"
        );
        assert_eq!(human_bytes(1 << 30), "1Gi");
        assert_eq!(human_bytes(1000), "1000");
    }

    #[test]
    fn a_stream_grows_by_bounded_steps_never_past_the_limit() {
        let limit = 3 * CHUNK + 5;
        let f = Input::new(
            "s",
            Limits {
                max_input: limit as u64,
            },
        );
        let data = vec![7u8; 3 * CHUNK + 5];
        let mut buf = Vec::new();
        for piece in data.chunks(1000) {
            f.append(&mut buf, piece, Input::too_large).unwrap();
            // Doubling below STEP, but never room past the limit.
            assert!(buf.capacity() <= limit, "{}", buf.capacity());
            assert!(
                buf.capacity() <= 2 * buf.len() + CHUNK,
                "{}",
                buf.capacity()
            );
        }
        assert_eq!(buf.capacity(), limit);
        assert!(f.append(&mut buf, b"x", Input::too_large).is_err());
    }

    #[test]
    fn gzip_past_what_is_kept_is_decompressed_again_to_its_size() {
        let data: Vec<u8> = (0..3 * CHUNK + 3).map(|i| (i % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json.gz");
        std::fs::write(&path, gzip(&data)).unwrap();
        let path = path.to_str().unwrap();
        let at = |max_input: usize| Input {
            name: path,
            limits: Limits {
                max_input: max_input as u64,
            },
            keep: CHUNK,
        };
        let file = || File::open(path).unwrap();
        // Past what is kept: counted on, then read again into a buffer of exactly its size.
        let back = at(data.len()).gunzip(file()).unwrap();
        assert_eq!(back.capacity(), data.len());
        assert!(back == data);
        let err = at(data.len() - 1).gunzip(file()).unwrap_err();
        assert!(err.to_string().contains("expands past"), "{err}");
        assert!(read_file(path, Limits::default()).unwrap() == data);
    }

    #[test]
    fn a_plain_file_past_the_limit_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.yaml");
        let file = File::create(&path).unwrap();
        // Sparse: a terabyte that costs no disk and must cost no memory.
        file.set_len(1 << 40).unwrap();
        let err = read_file(path.to_str().unwrap(), Limits::default()).unwrap_err();
        assert!(
            err.to_string().ends_with(
                "holds more than 1Gi, the limit for one input (--max-input-size raises it)"
            ),
            "{err}"
        );
        std::fs::write(&path, "kind: List\n").unwrap();
        let bytes = read_file(path.to_str().unwrap(), Limits::default()).unwrap();
        assert_eq!(bytes, b"kind: List\n");
        assert_eq!(bytes.capacity(), bytes.len());
    }

    /// A spool on a disk with room for `room` bytes.
    #[derive(Debug)]
    struct SmallDisk {
        spool: std::io::Cursor<Vec<u8>>,
        room: usize,
    }

    impl Write for SmallDisk {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.spool.get_ref().len() + buf.len() > self.room {
                return Err(std::io::ErrorKind::StorageFull.into());
            }
            self.spool.write(buf)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Read for SmallDisk {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.spool.read(buf)
        }
    }

    impl Seek for SmallDisk {
        fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
            self.spool.seek(pos)
        }
    }

    #[test]
    fn stdin_is_spooled_as_it_came_within_the_limit() {
        let text: Vec<u8> = (0..3 * CHUNK + 7).map(|i| b'a' + (i % 26) as u8).collect();
        let gz = gzip(&text);
        let input = Input::new(STDIN, Limits::default());
        let disk = |room| SmallDisk {
            spool: std::io::Cursor::new(Vec::new()),
            room,
        };
        for raw in [&text, &gz] {
            let Ok(Ok(spooled)) = input.spool(&mut &raw[..], disk(usize::MAX)) else {
                panic!("not spooled");
            };
            assert!(spooled.spool.into_inner() == *raw);
            // The disk fills up part way: what it held and the rest, read whole and decompressed.
            let Ok(Err(read)) = input.spool(&mut &raw[..], disk(raw.len() / 2)) else {
                panic!("spooled on a full disk");
            };
            assert!(read == text);
        }
        let at = |max_input| Input::new(STDIN, Limits { max_input });
        let err = at(text.len() as u64 - 1)
            .spool(&mut &text[..], disk(usize::MAX))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "<stdin>: holds more than {}, the limit for one input (--max-input-size raises it)",
                text.len() - 1
            )
        );
        assert!(
            at(text.len() as u64)
                .spool(&mut &text[..], disk(usize::MAX))
                .is_ok()
        );
    }

    #[test]
    fn spooled_stdin_streams_and_reads_as_stdin_does() {
        let text = b"kind: List\nitems: []\n".repeat(10_000);
        let limits = Limits::default();
        for raw in [text.clone(), gzip(&text)] {
            let spooled = Spooled {
                file: tempfile::tempfile().unwrap(),
                limits,
            };
            (&spooled.file).write_all(&raw).unwrap();
            let mut streamed = Vec::new();
            spooled
                .stream()
                .unwrap()
                .read_to_end(&mut streamed)
                .unwrap();
            assert!(streamed == text);
            // Read again whole, from wherever the stream left it.
            assert!(spooled.read().unwrap() == text);
            assert!(spooled.read().unwrap() == read_bytes(STDIN, raw, limits).unwrap());
        }
        let gz = gzip(&text);
        let cut = gz[..gz.len() - 6].to_vec();
        let spooled = Spooled {
            file: tempfile::tempfile().unwrap(),
            limits,
        };
        (&spooled.file).write_all(&cut).unwrap();
        assert_eq!(
            spooled.read().unwrap_err().to_string(),
            read_bytes(STDIN, cut, limits).unwrap_err().to_string()
        );
        let small = Limits { max_input: 1000 };
        let spooled = Spooled {
            file: tempfile::tempfile().unwrap(),
            limits: small,
        };
        (&spooled.file).write_all(&gz).unwrap();
        assert_eq!(
            spooled.read().unwrap_err().to_string(),
            read_bytes(STDIN, gz, small).unwrap_err().to_string()
        );
    }

    #[test]
    fn a_gzip_stream_that_ends_early_is_an_error() {
        let gz = gzip(b"kind: List\nitems: []\n");
        let err = read_bytes("t.gz", gz[..gz.len() - 6].to_vec(), Limits::default()).unwrap_err();
        assert!(
            err.to_string().contains("cannot decompress gzip data"),
            "{err}"
        );
    }
}
