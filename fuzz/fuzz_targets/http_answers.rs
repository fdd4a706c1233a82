//! Streamable HTTP answers (status, headers, body in chunks) through a real client and
//! transport over an in-memory server: no panic, no hang, the same outcome whatever the
//! chunking, bounded memory. See `kaged_mcp_fuzz::answers`.
//!
//! The memory check needs to count allocations: this binary's global allocator counts the
//! bytes the current thread holds (the client runs on the fuzzer's thread, on a current-thread
//! runtime) and their peak since the last reset.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kaged_mcp_fuzz::answers::{http_answers, Memory};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(n: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get().wrapping_add(n as isize);
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn shrank(n: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().wrapping_sub(n as isize)));
}

/// The system allocator, counting.
struct Counting;

// SAFETY: every call is passed on to `System` unchanged; the counters are thread-local cells
// with constant initializers (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn reset() {
    let live = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(live));
    BASE.with(|base| base.set(live));
}

thread_local! {
    static BASE: Cell<isize> = const { Cell::new(0) };
}

fn peak() -> usize {
    let base = BASE.with(Cell::get);
    PEAK.with(Cell::get).saturating_sub(base).max(0) as usize
}

fuzz_target!(|data: &[u8]| {
    http_answers(data, Some(Memory { reset, peak }));
});
