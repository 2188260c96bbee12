//! Memory shared with the processes this one forks: nginx's workers.
//!
//! nginx's master runs `init_by_lua` before it forks the workers, so
//! memory it maps `MAP_SHARED` there is the same physical memory in every
//! worker, and in the workers of each reload (forked from the same
//! master). Anonymous, not a `/dev/shm` file: a file another process can
//! shrink turns every access past its new end into SIGBUS in a worker,
//! and its contents would outlive an upgrade that changes the layout. The
//! cost: a restart (not a reload) starts with empty memory
//! (docs/behaviour.md).
//!
//! The safe side (`table`) receives the words as atomics and
//! never sees a pointer.

use std::io;
use std::sync::atomic::AtomicU64;

/// Maps `words` zeroed 64-bit words shared with every process this one
/// forks after the call, for the life of the process (never unmapped).
///
/// The kernel reserves no memory up front: pages are zero-filled on first
/// touch, so a table that is mostly empty costs only what it holds.
pub fn shared_words(words: usize) -> io::Result<&'static [AtomicU64]> {
    let bytes = words
        .checked_mul(std::mem::size_of::<AtomicU64>())
        .filter(|&b| b > 0 && b <= isize::MAX as usize)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such mapping size"))?;
    // SAFETY: a new anonymous mapping at an address the kernel picks: no
    // existing memory is touched; every argument is a plain value.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `p` is the start of a fresh mapping of `bytes` bytes,
    // readable and writable, page-aligned (so aligned for AtomicU64),
    // zero-filled by the kernel (all-zero bits are a valid AtomicU64), and
    // never unmapped or remapped by this crate, so `'static` holds. Other
    // processes write it concurrently only through the same atomics, which
    // is what AtomicU64's interior mutability allows behind a `&`.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<AtomicU64>(), words) })
}

/// Asks the CPU to start loading the cache line holding `word`, without
/// waiting for it: a hint, never a fault. (`model::simd` has the same hint
/// for the model's tables; this one serves the shared words.)
#[inline(always)]
pub fn prefetch(word: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint and never faults; the address
    // comes from a reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(word.as_ptr().cast::<i8>().cast_const());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn maps_zeroed_words_and_refuses_sizes_no_mapping_has() {
        let w = shared_words(1024).unwrap();
        assert_eq!(w.len(), 1024);
        assert!(w.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        w[1023].store(7, Ordering::Relaxed);
        assert_eq!(w[1023].load(Ordering::Relaxed), 7);
        assert_eq!(
            shared_words(0).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(shared_words(usize::MAX / 4).is_err());
    }
}
