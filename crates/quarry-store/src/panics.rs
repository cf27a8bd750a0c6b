//! Panics inside tantivy or redb over a damaged file, caught and made errors: quietly, so
//! that the store's error says it once, in a line.

std::thread_local! {
    /// Whether this thread runs [`catch_quietly`]'s work, whose panics become errors.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `work` as `catch_unwind` does, without the panic's report on stderr: a panic inside
/// tantivy or redb over a damaged file becomes the store's error, which says it once, in a
/// line. Panics elsewhere (in this thread outside `work`, in other threads) are reported by
/// the hook that was in place.
pub(crate) fn catch_quietly<T>(work: impl FnOnce() -> T) -> std::thread::Result<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let outer = QUIET.with(|quiet| quiet.replace(true));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    QUIET.with(|quiet| quiet.set(outer));
    caught
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(message), _) => (*message).to_owned(),
        (_, Some(message)) => message.clone(),
        _ => "no message".to_owned(),
    }
}
