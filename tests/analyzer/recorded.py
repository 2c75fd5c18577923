"""Recording a bundled test app for the output-format tests:
svcqueue with the demo's settings, re-recorded (at most 3 times) until its
queue lock was contended a few times, which on 2 cores it is not in about one
run in five (tests/testapps/ground_truth.py explains the two modes)."""
import json
import os
import shutil
import subprocess
import sys

SVCQ = ["--container=tree", "--producers=2", "--consumers=2",
        "--allocs-per-put=4"]
ATTEMPTS = 5


def record_svcqueue(mallock, workdir, duration="0.6", min_contended=5,
                    extra=(), env_extra=None):
    """(trace, JSON report). MALLOCK_TEST_TRACE names a trace to reuse
    instead (for trying mutations of the code under test quickly).
    env_extra: variables set for the app (the demo's
    TCMALLOC_TRANSFER_NUM_OBJ=1)."""
    trace = os.environ.get("MALLOCK_TEST_TRACE")
    if trace:
        r = subprocess.run([mallock, "report", "--format=json", trace],
                           capture_output=True, text=True, timeout=120)
        return trace, json.loads(r.stdout)
    bindir = os.path.dirname(os.path.abspath(mallock))
    app = os.path.join(bindir, "svcqueue")
    trace = os.path.join(workdir, "svcqueue.trace")
    env = dict(os.environ)
    env.pop("TCMALLOC_TRANSFER_NUM_OBJ", None)
    env.update(env_extra or {})
    last = None
    for attempt in range(ATTEMPTS):
        if os.path.exists(trace):
            os.remove(trace)
        p = subprocess.run([mallock, "record", "-o", trace, "--", app] + SVCQ
                           + ["--duration=" + duration] + list(extra), env=env,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise SystemExit("record failed: " + p.stderr)
        r = subprocess.run([mallock, "report", "--format=json", trace],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit("report failed: " + r.stderr)
        j = json.loads(r.stdout)
        q = [l for l in j["locks"] if l["name"] == "svcqueue.lock"]
        last = q[0]["contended"] if q else 0
        print("recording %d: svcqueue.lock contended %d times"
              % (attempt + 1, last))
        if last >= min_contended:
            return trace, j
    raise SystemExit("svcqueue.lock never contended >= %d times in %d "
                     "recordings (last %d)" % (min_contended, ATTEMPTS, last))


def ensure_tool(cmd, package):
    """The path of cmd, installing the Debian package when missing; None
    when it cannot be installed (the caller skips with 77)."""
    found = shutil.which(cmd) or (os.path.exists("/usr/lib/go/bin/" + cmd)
                                  and "/usr/lib/go/bin/" + cmd)
    if found:
        return found
    print("%s missing: apt-get install -y %s" % (cmd, package))
    try:
        r = subprocess.run(["apt-get", "install", "-y", package],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            print(r.stderr[-2000:], file=sys.stderr)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("apt-get: %s" % e, file=sys.stderr)
    return shutil.which(cmd)
