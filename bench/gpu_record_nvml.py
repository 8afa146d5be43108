"""Record raw NVML readings while a child process holds GPU memory and runs bursts of matrix products."""
import json, os, subprocess, sys, time
import pynvml as nv

WORKER = r'''
import sys, time, torch
x = torch.empty(512 * 2**20, dtype=torch.uint8, device="cuda")
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
print("ready", flush=True)
extra = []
t0 = time.time()
while time.time() - t0 < 30:
    t = time.time()
    while time.time() - t < 0.15:
        (a @ a).sum().item()
    time.sleep(0.15)
    if len(extra) < 6:
        extra.append(torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda"))
'''

def txt(v):
    return v.decode() if isinstance(v, bytes) else v

def safe(f, *a):
    try:
        return f(*a)
    except Exception as e:
        return f"ERR {type(e).__name__}: {e}"

def main(out):
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    ident = {
        "name": txt(nv.nvmlDeviceGetName(h)), "uuid": txt(nv.nvmlDeviceGetUUID(h)),
        "driver": txt(nv.nvmlSystemGetDriverVersion()), "cuda": safe(nv.nvmlSystemGetCudaDriverVersion_v2),
        "max_sm_mhz": safe(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
        "max_mem_mhz": safe(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
        "power_limit_mw": safe(nv.nvmlDeviceGetEnforcedPowerLimit, h),
        "mig": safe(nv.nvmlDeviceGetMigMode, h), "pci": safe(lambda: txt(nv.nvmlDeviceGetPciInfo(h).busId)),
        "count": nv.nvmlDeviceGetCount(),
    }
    w = subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True)
    w.stdout.readline()
    last = 0
    lastp = 0
    ticks = []
    for i in range(12):
        time.sleep(0.5)
        s = safe(nv.nvmlDeviceGetSamples, h, nv.NVML_GPU_UTILIZATION_SAMPLES, last)
        samples = []
        if not isinstance(s, str):
            samples = [[x.timeStamp, x.sampleValue.uiVal] for x in s[1]]
            if samples:
                last = max(t for t, _ in samples)
        pu = safe(nv.nvmlDeviceGetProcessUtilization, h, lastp)
        putil = []
        if not isinstance(pu, str):
            putil = [[p.pid, p.timeStamp, p.smUtil, p.memUtil] for p in pu]
            if putil:
                lastp = max(p[1] for p in putil)
        procs = safe(nv.nvmlDeviceGetComputeRunningProcesses, h)
        fds = []
        try:
            for fd in os.listdir(f"/proc/{w.pid}/fd"):
                t = os.readlink(f"/proc/{w.pid}/fd/{fd}")
                if t.startswith("/dev/nvidia"):
                    fds.append(t)
        except OSError as e:
            fds.append(f"ERR {e}")
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        u = nv.nvmlDeviceGetUtilizationRates(h)
        ticks.append({
            "t": time.time(), "util_samples": samples, "util_rates": [u.gpu, u.memory], "proc_util": putil,
            "procs": procs if isinstance(procs, str) else [[p.pid, p.usedGpuMemory] for p in procs],
            "mem": [mem.used, mem.total], "power_mw": safe(nv.nvmlDeviceGetPowerUsage, h),
            "temp_c": safe(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
            "sm_mhz": safe(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
            "reasons": safe(nv.nvmlDeviceGetCurrentClocksEventReasons, h),
            "worker_pid": w.pid, "worker_fds": sorted(set(fds)), "own_pid": os.getpid(),
            "worker_pid_visible_in_nvml": not isinstance(procs, str) and any(p.pid == w.pid for p in procs),
            "nvml_pids_in_our_ns": [] if isinstance(procs, str) else [os.path.exists(f"/proc/{p.pid}") for p in procs],
        })
    w.kill(); w.wait()
    json.dump({"identity": ident, "ticks": ticks}, open(out, "w"), indent=1)
    print("recorded", out, ident)

main(sys.argv[1])
