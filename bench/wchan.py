#!/usr/bin/env python3
# Off-CPU look at a memwal-server's MemWAL writer thread: samples its state and kernel stack from /proc
# (root needed for the stack) HZ times a second for SECONDS, then prints the state shares and the stacks
# seen in a sync or in D state, most frequent first. Used for RESULTS run 25e:
#   python3 bench/wchan.py PID SECONDS HZ
import os, sys, time, collections
pid, secs, hz = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
tid = None
for t in os.listdir(f"/proc/{pid}/task"):
    if open(f"/proc/{pid}/task/{t}/comm").read().startswith("memwal-writer"):
        tid = t
assert tid, "no writer thread"
stacks = collections.Counter(); states = collections.Counter()
end = time.time() + secs; n = 0
while time.time() < end:
    try:
        st = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()[0]
        stack = open(f"/proc/{pid}/task/{tid}/stack").read().split("\n")
    except OSError:
        break
    frames = [l.split(" ", 1)[1].split("+")[0] for l in stack if " " in l]
    states[st] += 1; n += 1
    if st == "D" or any("sync" in f for f in frames):
        stacks[" < ".join(frames[:8])] += 1
    time.sleep(1 / hz)
print("samples", n, "states", dict(states))
for s, c in stacks.most_common(12):
    print(f"{c:6d} {100*c/n:5.1f}%  {s}")
