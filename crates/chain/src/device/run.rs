//! Running one component on the device: its context binary made present once (content
//! addressed, uploaded under a temporary name, checked, renamed), its inputs and input list
//! uploaded, one `qnn-net-run` call for warm-up and timed inferences, outputs and the profile
//! brought back.

use super::*;

impl Device {
    /// The context binary `bin` on the device as `bin/<sha256>.bin`, copied only when missing.
    fn ensure_binary(&self, comp: &str, bin: &Path, reserve: u64) -> Result<String> {
        let sha = xtask_base::hashing::sha256_file(bin)?;
        let size = std::fs::metadata(bin)?.len();
        let w = quote(&self.ssh.url.workdir);
        let fin = format!("bin/{sha}.bin");
        let out = self.ssh.exec(
            &format!(
                "cd {w} && mkdir -p bin runs && if [ -f {fin} ]; then echo present=1; fi; echo \"free_kb=$(df -Pk . | awk 'NR==2 {{print $4}}')\""
            ),
            short(),
            "checking the device's work folder",
        )?;
        let present = out.lines().any(|l| l.trim() == "present=1");
        let free = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("free_kb="))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024);
        let need = reserve + if present { 0 } else { size } + DISK_MARGIN;
        if let Some(free) = free
            && free < need
        {
            bail!(
                "disk full on the device: {} free in {}, this run of {comp} needs about {} (binary {}, inputs and outputs, {} margin); free space there or use another work folder",
                mib(free),
                self.info.workdir_abs,
                mib(need),
                if present {
                    "already there".to_string()
                } else {
                    mib(size)
                },
                mib(DISK_MARGIN)
            );
        }
        if present {
            xtask_base::errln!(
                "      device: {comp} context binary already on the device ({fin}), not copied"
            );
            return Ok(fin);
        }
        let part = format!("bin/.{sha}.bin.part-{}", nonce());
        self.ssh.upload(
            bin,
            &format!("{}/{part}", self.ssh.url.workdir),
            transfer_timeout(),
            &format!("copying the context binary of {comp}"),
        )?;
        self.ssh.exec(
            &format!(
                "cd {w} && if [ \"$(sha256sum {part} | cut -d ' ' -f 1)\" = {sha} ]; then mv -f {part} {fin}; else rm -f {part}; echo 'the copied binary does not match its sha256' >&2; exit 4; fi"
            ),
            short(),
            &format!("checking the copied context binary of {comp}"),
        )?;
        self.uploads.set(self.uploads.get() + 1);
        xtask_base::errln!("      device: uploaded {comp} context binary ({size} bytes) as {fin}");
        Ok(fin)
    }

    /// Runs `comp`'s context binary on the device with `inputs`: `warmup + iters` inferences
    /// in one profiled `qnn-net-run` call; `log` keeps the device tools' output.
    pub fn run_component(
        &self,
        comp: &Component,
        bin: &Path,
        inputs: &BTreeMap<String, Tensor>,
        warmup: usize,
        iters: usize,
        log: &Path,
    ) -> Result<DeviceRun> {
        let name = comp.name();
        let lines = warmup + iters.max(1);
        let native = NativeIo::of(comp);
        let files = self.run_files()?;
        let in_bytes = stage_inputs(comp, inputs, native, &files, lines)?;
        let fin = self.ensure_binary(name, bin, in_bytes + output_bytes(comp) * lines as u64)?;
        self.ssh.upload(
            &files.staging.path().join("in"),
            &format!("{}/{}", self.ssh.url.workdir, files.part),
            transfer_timeout(),
            &format!("copying the inputs of {name}"),
        )?;
        let result = self
            .execute(comp, &fin, &files, native, log)
            .and_then(|()| self.fetch(comp, &files, native, warmup, lines));
        // The run's folder is scratch: removed whatever happened (best effort).
        let _ = self.ssh.exec(
            &format!(
                "cd {} && rm -rf {} {}",
                quote(&self.ssh.url.workdir),
                files.run_dir,
                files.part
            ),
            short(),
            "cleaning up",
        );
        result.with_context(|| format!("running {name} on the device {}", self.info.url))
    }

    /// A new run's names: unique to this process, moment and run.
    fn run_files(&self) -> Result<RunFiles> {
        let id = format!("{}-{}", nonce(), self.runs.get());
        self.runs.set(self.runs.get() + 1);
        Ok(RunFiles {
            run_dir: format!("runs/{id}"),
            part: format!("runs/.{id}.part"),
            staging: tempfile::tempdir().context("cannot create a staging folder")?,
        })
    }

    /// Names the uploaded inputs and runs `qnn-net-run` then `qnn-profile-viewer` on them;
    /// `log` gets the script and its output (or its error) either way.
    fn execute(
        &self,
        comp: &Component,
        fin: &str,
        files: &RunFiles,
        native: NativeIo,
        log: &Path,
    ) -> Result<()> {
        let wq = quote(&self.ssh.url.workdir);
        let (part, run_dir) = (&files.part, &files.run_dir);
        self.ssh.exec(
            &format!("cd {wq} && mv {part} {run_dir}"),
            short(),
            "naming the uploaded inputs",
        )?;
        let (root, dir) = (
            self.info.sdk_root.as_deref().unwrap_or_default(),
            self.info.arch_dir.as_deref().unwrap_or_default(),
        );
        let r = quote(root);
        let dsp = self.soc.dsp_lib_dir();
        let flags = native.flags().join(" ");
        let script = format!(
            "cd {wq} && export LD_LIBRARY_PATH={r}/lib/{dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} \
             && export ADSP_LIBRARY_PATH=\"{r}/{dsp}${{ADSP_LIBRARY_PATH:+;$ADSP_LIBRARY_PATH}}\" \
             && export DSP_LIBRARY_PATH=\"{r}/{dsp}${{DSP_LIBRARY_PATH:+;$DSP_LIBRARY_PATH}}\" \
             && {r}/bin/{dir}/qnn-net-run --retrieve_context {fin} --backend {r}/lib/{dir}/libQnnHtp.so \
             --input_list {run_dir}/input_list.txt --output_dir {run_dir}/out --profiling_level basic {flags} \
             && {r}/bin/{dir}/qnn-profile-viewer --input_log {run_dir}/out/qnn-profiling-data_0.log --output {run_dir}/out/profile.csv"
        );
        let out = self.ssh.exec(
            &script,
            xtask_ctx_build::toolchain::sdk::step_timeout(),
            &format!("qnn-net-run of {}", comp.name()),
        );
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let text = match &out {
            Ok(text) => format!("$ {script}\n{text}"),
            Err(e) => format!("$ {script}\n{e:#}"),
        };
        std::fs::write(log, text).with_context(|| format!("cannot write {}", log.display()))?;
        out.map(|_| ())
    }

    /// Copies back the first inference's outputs and the profile; the timed inferences'
    /// execute times are the profile's rows after the `warmup` first.
    fn fetch(
        &self,
        comp: &Component,
        files: &RunFiles,
        native: NativeIo,
        warmup: usize,
        lines: usize,
    ) -> Result<DeviceRun> {
        let name = comp.name();
        let back = files.staging.path().join("out");
        std::fs::create_dir_all(&back)
            .with_context(|| format!("cannot create {}", back.display()))?;
        for f in ["Result_0", "profile.csv"] {
            self.ssh.download(
                &format!("{}/{}/out/{f}", self.ssh.url.workdir, files.run_dir),
                &back.join(f),
                transfer_timeout(),
                &format!("copying back the outputs of {name}"),
            )?;
        }
        let outputs =
            xtask_ctx_build::toolchain::sdk::steps::read_result_outputs(comp, &back, native)?;
        let csv = std::fs::read_to_string(back.join("profile.csv"))
            .context("reading the device's profile CSV")?;
        let all = execute_samples_us(&csv, TIMING_SOURCE)
            .context("reading the device's qnn-profile-viewer CSV")?;
        if all.len() != lines {
            bail!(
                "the device's profile of {name} has {} {TIMING_SOURCE} EXECUTE rows for {lines} inferences",
                all.len()
            );
        }
        let samples_us = all[warmup..].to_vec();
        let stats = ExecuteStats::of(TIMING_SOURCE, &samples_us);
        Ok(DeviceRun {
            outputs,
            samples_us,
            stats,
        })
    }
}

/// One component run's names on the device and on this host.
struct RunFiles {
    /// `runs/<id>`: the run's folder in the work folder.
    run_dir: String,
    /// `runs/.<id>.part`: the inputs' folder while it uploads (renamed once complete).
    part: String,
    /// This host's side: the inputs in `in/`, what comes back in `out/`.
    staging: tempfile::TempDir,
}

/// Writes the inputs as raw files in the device's input order, and an input list repeating
/// them once per inference; returns their size in bytes.
fn stage_inputs(
    comp: &Component,
    inputs: &BTreeMap<String, Tensor>,
    native: NativeIo,
    files: &RunFiles,
    lines: usize,
) -> Result<u64> {
    let local = files.staging.path().join("in");
    std::fs::create_dir_all(&local)
        .with_context(|| format!("cannot create {}", local.display()))?;
    let mut entries = Vec::new();
    let mut in_bytes = 0u64;
    for (i, spec) in comp.file.inputs.iter().enumerate() {
        let input = spec.name.get_ref();
        let t = inputs
            .get(input)
            .with_context(|| format!("no input `{input}` for {}", comp.name()))?;
        let bytes = xtask_ctx_build::toolchain::sdk::steps::input_bytes(input, t, native.inputs)?;
        in_bytes += bytes.len() as u64;
        let raw = local.join(format!("input_{i}.raw"));
        std::fs::write(&raw, bytes).with_context(|| format!("cannot write {}", raw.display()))?;
        entries.push(format!("{input}:={}/input_{i}.raw", files.run_dir));
    }
    let list = local.join("input_list.txt");
    std::fs::write(&list, format!("{}\n", entries.join(" ")).repeat(lines))
        .with_context(|| format!("cannot write {}", list.display()))?;
    Ok(in_bytes)
}

/// An upper bound of one inference's outputs in bytes (8 bytes an element: the widest dtype).
fn output_bytes(comp: &Component) -> u64 {
    comp.file
        .outputs
        .iter()
        .map(|o| o.shape.iter().product::<usize>() as u64 * 8)
        .sum()
}
