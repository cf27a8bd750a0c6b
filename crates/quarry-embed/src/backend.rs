//! Which Burn backend runs the model, and why.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;

use crate::EmbedError;

/// The backend a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The GPU when this build has the `wgpu` feature and a physical GPU adapter exists,
    /// otherwise the CPU. The reason for the choice is reported in [`BackendInfo::reason`].
    #[default]
    Auto,
    /// Burn's `flex` CPU backend.
    Cpu,
    /// Burn's WGPU backend on a physical GPU; an error where there is none, unless
    /// [`ALLOW_SOFTWARE`] is set: then a software adapter (Mesa's lavapipe) runs it, for
    /// tests of the GPU path on machines without one.
    Gpu,
}

impl FromStr for BackendChoice {
    type Err = EmbedError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" | "wgpu" => Ok(Self::Gpu),
            other => Err(EmbedError::Backend {
                requested: other.into(),
                message: "unknown backend; use auto, cpu or gpu".into(),
            }),
        }
    }
}

impl BackendChoice {
    /// The name [`BackendChoice::from_str`] reads (`QUARRY_BACKEND`'s value).
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
        }
    }
}

/// The backend and device actually running the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// Burn's name for the backend: `flex` or `wgpu`.
    pub backend: &'static str,
    /// The device: the GPU's name, or the CPU and its thread count.
    pub device: String,
    /// Why this backend: asked for, or what [`BackendChoice::Auto`] found.
    pub reason: String,
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}: {}", self.backend, self.device, self.reason)
    }
}

/// Picks the device for `choice`.
pub fn select(choice: BackendChoice) -> Result<(Device, BackendInfo), EmbedError> {
    match choice {
        BackendChoice::Cpu => Ok(cpu("asked for".into())),
        BackendChoice::Gpu => gpu()
            .or_else(software_gpu)
            .map_err(|message| EmbedError::Backend {
                requested: "gpu".into(),
                message,
            }),
        BackendChoice::Auto => Ok(gpu().unwrap_or_else(cpu)),
    }
}

/// Whether `choice` runs the model on a GPU (without loading anything): `Auto` looks for a
/// physical adapter as [`select`] does.
pub fn picks_gpu(choice: BackendChoice) -> bool {
    match choice {
        BackendChoice::Cpu => false,
        BackendChoice::Gpu => true,
        BackendChoice::Auto => gpu().is_ok(),
    }
}

fn cpu(reason: String) -> (Device, BackendInfo) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let info = BackendInfo {
        backend: "flex",
        device: format!("CPU, {threads} threads"),
        reason,
    };
    (Device::flex(), info)
}

/// The physical GPU, looked for once a process: resolving the precision and loading the
/// model both ask, and enumerating adapters is not free.
#[cfg(feature = "wgpu")]
fn gpu() -> Result<(Device, BackendInfo), String> {
    static FOUND: std::sync::OnceLock<Result<(Device, BackendInfo), String>> =
        std::sync::OnceLock::new();
    FOUND.get_or_init(find_gpu).clone()
}

#[cfg(feature = "wgpu")]
fn find_gpu() -> Result<(Device, BackendInfo), String> {
    // Only a physical adapter: `Device::default()` would also take a software rasteriser
    // (Mesa's lavapipe), which is far slower than the CPU backend.
    let gpus = Device::enumerate_physical();
    let Some(gpu) = gpus.into_iter().next() else {
        return Err("no physical GPU adapter found".into());
    };
    let device = gpu
        .devices
        .first()
        .cloned()
        .ok_or_else(|| format!("GPU {} has no usable device", gpu.name))?;
    let info = BackendInfo {
        backend: "wgpu",
        device: gpu.name,
        reason: "a physical GPU adapter was found".into(),
    };
    Ok((device, info))
}

/// The environment variable that lets [`BackendChoice::Gpu`] run on a software adapter
/// when no physical GPU exists (`1`). [`BackendChoice::Auto`] never does: a software
/// rasteriser is far slower than the CPU backend.
pub const ALLOW_SOFTWARE: &str = "QUARRY_WGPU_ALLOW_SOFTWARE";

/// The software adapter (Mesa's lavapipe: Vulkan on the CPU) where [`ALLOW_SOFTWARE`] is
/// set, for a caller that asked for the GPU and has none (`no_gpu` says why); looked for
/// once a process.
#[cfg(feature = "wgpu")]
fn software_gpu(no_gpu: String) -> Result<(Device, BackendInfo), String> {
    if std::env::var(ALLOW_SOFTWARE).ok().as_deref() != Some("1") {
        return Err(format!(
            "{no_gpu} (set {ALLOW_SOFTWARE}=1 to run on a software adapter such as Mesa's \
             lavapipe: slower than the CPU backend, meant for tests)"
        ));
    }
    static FOUND: std::sync::OnceLock<Result<(Device, BackendInfo), String>> =
        std::sync::OnceLock::new();
    FOUND.get_or_init(|| find_software(&no_gpu)).clone()
}

#[cfg(feature = "wgpu")]
fn find_software(no_gpu: &str) -> Result<(Device, BackendInfo), String> {
    use burn::tensor::DeviceKind;
    let device = Device::wgpu(DeviceKind::Cpu);
    // Opening a device where no adapter exists panics inside the runtime.
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device.identity()));
    let name = match opened {
        Ok(Some(identity)) => identity.name,
        Ok(None) => "a software adapter".into(),
        Err(_) => return Err(format!("{no_gpu}, and no software adapter could be opened")),
    };
    let info = BackendInfo {
        backend: "wgpu",
        device: format!("{name} (software adapter)"),
        reason: format!("asked for; {no_gpu}, and {ALLOW_SOFTWARE}=1 allows a software one"),
    };
    Ok((device, info))
}

#[cfg(not(feature = "wgpu"))]
fn gpu() -> Result<(Device, BackendInfo), String> {
    Err("no GPU backend in this build (cargo feature `wgpu`)".into())
}

#[cfg(not(feature = "wgpu"))]
fn software_gpu(no_gpu: String) -> Result<(Device, BackendInfo), String> {
    Err(no_gpu)
}
