#!/usr/bin/python3
"""SlurmChain: a nendo run split into a chain of real Slurm jobs ends bitwise where one
uninterrupted run ends.

Usage: slurm_chain_test.py NENDO_BINARY WORK_DIR

1. Starts a single-node Slurm cluster on loopback (tests/batch/slurm_cluster.sh: real munged,
   slurmctld, slurmd) with its state in a short directory under /tmp.
2. Runs tests/batch/jelly-chain.yaml uninterrupted: mpirun -np 2 nendo run (WORK_DIR/ref).
3. Runs it again as a chain of Slurm jobs on 2 tasks (jobs/slurm/submit-chain.sh, WORK_DIR/chain)
   with a wall-time budget per link of a third of the uninterrupted run's time (at most 12 s, at
   least 4 s: the scene takes 10-40 s on the machines CI runs on), so that links end by nendo's budget,
   and sends the second link the warning signal exactly as `#SBATCH --signal=B:USR1@...`
   does (scancel --signal=USR1 --batch JOB), so that one link ends by a real Slurm signal.
4. Checks: at least 3 jobs, each COMPLETED with exit code 0 (Slurm's job completion record),
   at least one link stopped by nendo's budget and one by SIGUSR1, and the final checkpoint and
   every particle output file of the chain identical, array for array and bit for bit (rows
   sorted by particle id), to those of the uninterrupted run.
5. Stops the cluster, always, and copies its logs to WORK_DIR/slurm-logs.
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


def chain(env, walltime):
    d = os.path.join(WORK, "chain")
    os.makedirs(d)
    chain_log = os.path.join(d, "nendo-chain.log")
    env = dict(env, NENDO=NENDO, NENDO_CHAIN_MAX_LINKS="12", NENDO_CHAIN_LOG=chain_log)
    cmd = [SUBMIT, f"--ntasks={RANKS}", "--time=10", f"--output={d}/nendo-chain-%j.out", "--",
           SCENE, "--set", f"checkpoint.dir={d}/checkpoints", "--output", f"{d}/out",
           "--walltime", str(walltime)]
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
    """Slurm's completion record (jobcomp/filetxt) of each job: {job: (JobState, ExitCode)}."""
    path = os.path.join(statedir, "log", "jobcomp.log")
    t0 = time.time()
    while True:
        rec = {}
        for line in read(path).splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            rec[f.get("JobId")] = (f.get("JobState"), f.get("ExitCode"))
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
        d, jobs, signalled = chain(env, walltime)

        # The jobs of the chain and how each ended.
        check(len(jobs) >= 3, f"at least 3 jobs in the chain: {jobs}")
        check(len(set(jobs)) == len(jobs), "every link is its own job")
        rec = jobcomp_records(statedir, jobs)
        for j in jobs:
            check(rec.get(j) == ("COMPLETED", "0:0"), f"job {j}: Slurm records {rec.get(j)}")
        outs = {j: read(os.path.join(d, f"nendo-chain-{j}.out")) for j in jobs}
        by_budget = [j for j in jobs if "nendo: stopped by the wall-time budget" in outs[j]
                     and "received SIG" not in outs[j] and "not finished: submitted" in outs[j]]
        check(len(by_budget) >= 1, f"links stopped by nendo's wall-time budget: {by_budget}")
        sig_out = outs.get(signalled, "")
        check(signalled in jobs and "received SIGUSR1" in sig_out and "nendo: stopped by SIGUSR1" in sig_out
              and "nendo exited with 0 (signals: USR1)" in sig_out and "not finished: submitted" in sig_out,
              f"job {signalled} got SIGUSR1 from Slurm, nendo checkpointed and exited 0, the chain went on")

        # The final state, bit for bit.
        ref_ck = newest(os.path.join(ref, "checkpoints", "checkpoint_*.h5"))
        got_ck = newest(os.path.join(d, "checkpoints", "checkpoint_*.h5"))
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
