#!/usr/bin/python3
"""SlurmChain: a nendo run split into a chain of real Slurm jobs ends bitwise where one
uninterrupted run ends; a job-array sweep runs each parameter set into its own folder.

Usage: slurm_chain_test.py NENDO_BINARY WORK_DIR

1. Starts a single-node Slurm cluster on loopback (tests/batch/slurm_cluster.sh: real munged,
   slurmctld, slurmd) with its state in a short directory under /tmp.
2. Runs tests/batch/jelly-chain.yaml uninterrupted: mpirun -np 2 nendo run (WORK_DIR/ref).
3. Submits a sweep of 2 parameter sets (jobs/slurm/nendo-sweep.sbatch, --array=1-2, 1 task each,
   NENDO_LAUNCHER=mpirun, WORK_DIR/sweep): the jelly's first 0.02 s of free fall under two gravities.
4. Runs the scene again as a chain of Slurm jobs on 2 tasks (jobs/slurm/submit-chain.sh,
   WORK_DIR/chain), launched with srun (the default inside Slurm), the first link depending on the
   sweep (--dependency=afterok:SWEEP), nendo found through a `module load` (NENDO_SETUP defines a
   stand-in `module` whose `load` puts nendo on PATH; NENDO_MODULES), the checkpoints where the
   scene's checkpoint.dir puts them. Wall-time budget per link: a third of the uninterrupted run's time (at most 12 s, at
   least 4 s: the scene takes 10-40 s on the machines CI runs on), so that links end by nendo's budget,
   and sends the second link the warning signal exactly as `#SBATCH --signal=B:USR1@...`
   does (scancel --signal=USR1 --batch JOB), so that one link ends by a real Slurm signal.
5. Checks: at least 3 jobs, each COMPLETED with exit code 0 (Slurm's job completion record),
   launched with srun after a module load, the first one started after the sweep and no later one
   given its dependency, at least one link stopped by nendo's budget and one by SIGUSR1, and the
   final checkpoint and every particle output file of the chain identical, array for array and
   bit for bit (rows sorted by particle id), to those of the uninterrupted run. Each sweep task
   COMPLETED, wrote its outputs into its own folder, and its particles fall at its own gravity.
6. Stops the cluster, always, and copies its logs to WORK_DIR/slurm-logs.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

NENDO = os.path.abspath(sys.argv[1])
WORK = os.path.abspath(sys.argv[2])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENE = os.path.join(HERE, "jelly-chain.yaml")
CLUSTER = os.path.join(HERE, "slurm_cluster.sh")
SUBMIT = os.path.join(ROOT, "jobs", "slurm", "submit-chain.sh")
SWEEP = os.path.join(ROOT, "jobs", "slurm", "nendo-sweep.sbatch")
SWEEP_SETS = {"g5": -5.0, "g10": -10.0}   # name: gravity y of each parameter set
SWEEP_END = 0.02                         # free fall: the jelly lands after 0.25 s
# The scene's own checkpoint.dir, relative to the directory the chain is submitted from
SCENE_CHECKPOINT_DIR = "checkpoints/jelly-chain"
RANKS = 2
SIGNAL_LINK = 2     # the link that gets SIGUSR1 from Slurm
CHAIN_TIMEOUT = 480

failures = []


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def check(ok, msg):
    log(("ok    " if ok else "FAIL  ") + msg)
    if not ok:
        failures.append(msg)
    return ok


def run(cmd, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, text=True, **kw)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


# ---------------------------------------------------------------- comparisons

def particle_arrays(path):
    """The /particles datasets of a particle or checkpoint file, rows sorted by /particles/id."""
    with h5py.File(path, "r") as f:
        g = f["particles"]
        order = np.argsort(g["id"][:], kind="stable")
        arrays = {name: g[name][:][order] for name in g if isinstance(g[name], h5py.Dataset)}
        attrs = {k: f.attrs[k] for k in ("time", "step") if k in f.attrs}
    return arrays, attrs


def compare(ref_path, chain_path, what):
    ref, ref_attrs = particle_arrays(ref_path)
    got, got_attrs = particle_arrays(chain_path)
    ok = check(sorted(ref) == sorted(got), f"{what}: same datasets {sorted(ref)}")
    for name in sorted(set(ref) & set(got)):
        a, b = ref[name], got[name]
        # Bitwise: the raw bytes (so -0.0 differs from 0.0 and NaNs compare as their bits).
        same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        if not same and a.shape == b.shape and a.dtype.kind == "f":
            diff = np.abs(a.astype(float) - b.astype(float)).max()
            ok &= check(False, f"{what}: /particles/{name} differs (max |diff| {diff:.3e})")
        elif not same:
            ok &= check(False, f"{what}: /particles/{name} differs ({a.dtype}{a.shape} vs {b.dtype}{b.shape})")
    for k in ref_attrs:
        ok &= check(k in got_attrs and np.array_equal(ref_attrs[k], got_attrs[k]),
                    f"{what}: attribute {k} {ref_attrs[k]} == {got_attrs.get(k)}")
    if ok:
        n = len(next(iter(ref.values()))) if ref else 0
        check(True, f"{what}: {len(ref)} datasets of {n} particles bitwise identical")
    return ok


def newest(pattern):
    files = sorted(glob.glob(pattern))
    return files[-1] if files else None


# ---------------------------------------------------------------- the runs

def uninterrupted(env):
    d = os.path.join(WORK, "ref")
    os.makedirs(d)
    cmd = ["mpirun", "-np", str(RANKS), NENDO, "run", SCENE,
           "--set", f"checkpoint.dir={d}/checkpoints", "--output", f"{d}/out"]
    t0 = time.time()
    with open(os.path.join(d, "nendo.log"), "w") as out:
        r = run(cmd, cwd=d, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=400)
    seconds = time.time() - t0
    log(f"uninterrupted run: exit {r.returncode} after {seconds:.1f} s")
    if not check(r.returncode == 0, "uninterrupted run exits 0"):
        print(read(os.path.join(d, "nendo.log"))[-3000:])
    return d, seconds


def link_budget(reference_seconds):
    """nendo's wall-time budget per link: a third of the uninterrupted run, so that the chain has
    at least 3 links on a fast machine as on a slow one (a fixed 12 s let a 10 s run finish in one)."""
    return max(4, min(12, int(reference_seconds / 3)))


def module_setup(d):
    """A stand-in for a site's `module` command: `module load` records its arguments and puts a
    directory holding nendo on PATH, as a site's nendo module would."""
    bindir = os.path.join(d, "modules", "bin")
    os.makedirs(bindir)
    os.symlink(NENDO, os.path.join(bindir, "nendo"))
    setup = os.path.join(d, "modules", "setup.sh")
    with open(setup, "w") as f:
        f.write(f'module() {{ echo "$*" >>{d}/modules/loaded; [ "$1" = load ] && export PATH={bindir}:$PATH; }}\n')
    return setup


def sweep(env):
    """Submits the job-array sweep; returns its folder and array job id."""
    d = os.path.join(WORK, "sweep")
    os.makedirs(d)
    params = os.path.join(d, "gravity.txt")
    with open(params, "w") as f:
        f.write("# name  overrides\n\n")
        f.writelines(f"{name} gravity=[0,{g},0]\n" for name, g in SWEEP_SETS.items())
    env = dict(env, NENDO=NENDO, NENDO_LAUNCHER="mpirun")
    r = run(["sbatch", "--parsable", f"--array=1-{len(SWEEP_SETS)}", "--ntasks=1", "--time=5",
             f"--output={d}/nendo-sweep-%A_%a.out", SWEEP, params, SCENE, "--set", f"time.end={SWEEP_END}",
              "--set", f"output.every={SWEEP_END / 2}"],
            cwd=d, env=env, capture_output=True)
    check(r.returncode == 0, f"sbatch of the sweep exits 0 ({r.stdout.strip()} {r.stderr.strip()})")
    return d, r.stdout.strip().split(";")[0]


def missing_module_command_is_an_error(env):
    """A sweep task (run by hand, outside Slurm) with NENDO_MODULES but no `module` anywhere stops
    before nendo with exit 2, naming the problem."""
    d = os.path.join(WORK, "no-module")
    os.makedirs(d)
    params = os.path.join(d, "p.txt")
    with open(params, "w") as f:
        f.write("a time.end=0.01\n")
    env = dict(env, NENDO=NENDO, NENDO_MODULES="nendo/test", SLURM_ARRAY_TASK_ID="1",
               NENDO_SWEEP_SCRIPT=SWEEP, MODULESHOME="/nonexistent")
    r = run(["bash", SWEEP, params, SCENE], cwd=d, env=env, capture_output=True)
    check(r.returncode == 2 and "but there is no 'module' command" in r.stderr
          and not os.path.exists(os.path.join(d, "sweep-p")),
          f"NENDO_MODULES without a module command: exit 2 before nendo ({r.returncode}: {r.stderr.strip()[-200:]})")


def check_sweep(d, array_job, records):
    tasks = [rec for rec in records.values() if rec.get("Name") == "nendo-sweep"]
    check(len(tasks) == len(SWEEP_SETS) and all((t["JobState"], t["ExitCode"]) == ("COMPLETED", "0:0") for t in tasks),
          f"the {len(SWEEP_SETS)} sweep tasks COMPLETED with exit code 0: "
          f"{[(t['JobId'], t['JobState'], t['ExitCode']) for t in tasks]}")
    for k, (name, g) in enumerate(SWEEP_SETS.items(), start=1):
        log_text = read(os.path.join(d, f"nendo-sweep-{array_job}_{k}.out"))
        check(f"set '{name}' into sweep-gravity/{name}: mpirun -np 1 " in log_text,
              f"sweep task {k} ran set '{name}' with mpirun into its folder")
        files = sorted(glob.glob(os.path.join(d, "sweep-gravity", name, "particles_*.h5")))
        if not check(len(files) >= 2, f"sweep task {k}: outputs in sweep-gravity/{name}: {len(files)}"):
            print(log_text[-2000:])
            continue
        with h5py.File(files[-1], "r") as f:
            vy, t = f["particles/velocity"][:, 1], float(f.attrs["time"])
        check(abs(t - SWEEP_END) < 1e-12 and np.allclose(vy, g * t, rtol=1e-9, atol=1e-12),
              f"sweep task {k}: the particles fall at gravity {g} (v_y {vy.min():.9g} to {vy.max():.9g} at t = {t})")


def chain(env, walltime, after_job):
    d = os.path.join(WORK, "chain")
    os.makedirs(d)
    chain_log = os.path.join(d, "nendo-chain.log")
    env = dict(env, NENDO="nendo", NENDO_SETUP=module_setup(d), NENDO_MODULES="nendo/test",
               NENDO_CHAIN_MAX_LINKS="12", NENDO_CHAIN_LOG=chain_log)
    cmd = [SUBMIT, f"--ntasks={RANKS}", "--time=10", f"--output={d}/nendo-chain-%j.out",
           f"--dependency=afterok:{after_job}", "--", SCENE, "--output", f"{d}/out", "--walltime", str(walltime)]
    signal_after = min(8, walltime - 2)  # seconds after link SIGNAL_LINK started nendo, at the latest
    t0 = time.time()
    r = run(cmd, cwd=d, env=env, capture_output=True)
    if not check(r.returncode == 0, f"submit-chain.sh exits 0 ({r.stdout.strip()} {r.stderr.strip()})"):
        return d, [], None
    first = r.stdout.strip()
    log(f"first link: job {first}")

    signalled = None
    seen = {}
    done = None
    while time.time() - t0 < CHAIN_TIMEOUT:
        text = read(chain_log)
        lines = text.splitlines()
        if signalled is None:
            # The job of link SIGNAL_LINK, once nendo is stepping: its first progress line
            # (flushed every 2 s) comes after nendo installed its signal handlers; or, at the
            # latest, signal_after s after the link started nendo.
            for out in glob.glob(os.path.join(d, "nendo-chain-*.out")):
                text_out = read(out)
                m = re.search(rf"job (\d+) link {SIGNAL_LINK}/\d+: \S+ running:", text_out)
                if m and m.group(1) not in seen:
                    seen[m.group(1)] = time.time()
                if m and (re.search(r"^step ", text_out, re.M) or time.time() - seen[m.group(1)] > signal_after):
                    signalled = m.group(1)
                    s = run(["scancel", "--signal=USR1", "--batch", signalled], env=env,
                            capture_output=True)
                    check(s.returncode == 0, f"scancel --signal=USR1 --batch {signalled} {s.stderr.strip()}")
                    break
        last = lines[-1] if lines else ""
        if "the chain ends" in last or "the chain stops" in last:
            done = last
            break
        time.sleep(0.5)
    log(f"chain over after {time.time() - t0:.1f} s: {done}")
    check(done is not None and "finished: the chain ends" in done, "the chain ends with a finished simulation")
    print(read(chain_log), flush=True)
    jobs = re.findall(r"job=(\S+) link=", read(chain_log))
    return d, jobs, signalled


def jobcomp_records(statedir, jobs, timeout=30):
    """Slurm's completion record (jobcomp/filetxt) of each job: {job: {field: value}}."""
    path = os.path.join(statedir, "log", "jobcomp.log")
    t0 = time.time()
    while True:
        rec = {}
        for line in read(path).splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            rec[f.get("JobId")] = f
        if all(j in rec for j in jobs) or time.time() - t0 > timeout:
            return rec
        time.sleep(0.5)


def main():
    t_start = time.time()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    # Unix socket paths are short: the cluster's state lives under /tmp, its logs are copied.
    statedir = tempfile.mkdtemp(prefix="nendo-slurm-", dir="/tmp")
    env = dict(os.environ, SLURM_CONF=os.path.join(statedir, "slurm.conf"))
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
    try:
        r = run(["bash", CLUSTER, "start", statedir], env=env)
        if not check(r.returncode == 0, "the Slurm cluster starts (slurm_cluster.sh start)"):
            return 1
        run(["sinfo"], env=env)

        ref, seconds = uninterrupted(env)
        walltime = link_budget(seconds)
        log(f"wall-time budget per link: {walltime} s")
        missing_module_command_is_an_error(env)
        sweep_dir, sweep_job = sweep(env)
        d, jobs, signalled = chain(env, walltime, sweep_job)

        # The jobs of the chain and how each ended.
        check(len(jobs) >= 3, f"at least 3 jobs in the chain: {jobs}")
        check(len(set(jobs)) == len(jobs), "every link is its own job")
        rec = jobcomp_records(statedir, jobs)
        for j in jobs:
            state = (rec.get(j, {}).get("JobState"), rec.get(j, {}).get("ExitCode"))
            check(state == ("COMPLETED", "0:0"), f"job {j}: Slurm records {state}")
        check_sweep(sweep_dir, sweep_job, rec)
        outs = {j: read(os.path.join(d, f"nendo-chain-{j}.out")) for j in jobs}
        check(all(f": output in {d}/out, checkpoints in {SCENE_CHECKPOINT_DIR}\n" in outs[j] for j in jobs),
              f"every link uses the scene's checkpoint.dir ({SCENE_CHECKPOINT_DIR}) and the --output folder")
        check(all("module load nendo/test" in outs[j] and re.search(r"running: srun nendo run ", outs[j]) for j in jobs),
              "every link loads the module and runs `srun nendo run` (no -n: the allocation)")
        check(read(os.path.join(d, "modules", "loaded")).splitlines() == ["load nendo/test"] * len(jobs),
              "`module load nendo/test` once per link")
        sweep_end = max((r["EndTime"] for r in rec.values() if r.get("Name") == "nendo-sweep"), default="")
        first_start = rec.get(jobs[0], {}).get("StartTime", "") if jobs else ""
        check(sweep_end != "" and first_start >= sweep_end,
              f"the first link started ({first_start}) after the sweep it depends on ended ({sweep_end})")
        check(not any(re.search(rf"submitting: .*afterok:{sweep_job}\b", outs[j]) for j in jobs),
              "the later links do not repeat the first link's --dependency")
        by_budget = [j for j in jobs if "nendo: stopped by the wall-time budget" in outs[j]
                     and "received SIG" not in outs[j] and "not finished: submitted" in outs[j]]
        check(len(by_budget) >= 1, f"links stopped by nendo's wall-time budget: {by_budget}")
        sig_out = outs.get(signalled, "")
        check(signalled in jobs and "received SIGUSR1" in sig_out and "nendo: stopped by SIGUSR1" in sig_out
              and "nendo exited with 0 (signals: USR1)" in sig_out and "not finished: submitted" in sig_out,
              f"job {signalled} got SIGUSR1 from Slurm, nendo checkpointed and exited 0, the chain went on")

        # The final state, bit for bit.
        ref_ck = newest(os.path.join(ref, "checkpoints", "checkpoint_*.h5"))
        got_ck = newest(os.path.join(d, SCENE_CHECKPOINT_DIR, "checkpoint_*.h5"))
        if check(ref_ck is not None and got_ck is not None, f"final checkpoints: {ref_ck}, {got_ck}"):
            check(os.path.basename(ref_ck) == os.path.basename(got_ck), "the same final step")
            compare(ref_ck, got_ck, "final checkpoint")
        ref_out = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ref, "out", "particles_*.h5")))
        got_out = sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "out", "particles_*.h5")))
        check(len(ref_out) > 0 and ref_out == got_out, f"the same {len(ref_out)} output files")
        for name in sorted(set(ref_out) & set(got_out)):
            compare(os.path.join(ref, "out", name), os.path.join(d, "out", name), name)
    finally:
        r = run(["bash", CLUSTER, "stop", statedir], env=env)
        check(r.returncode == 0, "the Slurm cluster stops")
        shutil.copytree(os.path.join(statedir, "log"), os.path.join(WORK, "slurm-logs"), dirs_exist_ok=True)
        shutil.copy(os.path.join(statedir, "slurm.conf"), os.path.join(WORK, "slurm-logs"))
        shutil.rmtree(statedir, ignore_errors=True)
        log(f"total {time.time() - t_start:.1f} s")
    if failures:
        print(f"\n{len(failures)} check(s) failed:\n  " + "\n  ".join(failures))
        return 1
    print("\nSlurmChain: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
