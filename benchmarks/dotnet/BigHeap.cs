// A managed heap of a chosen size, for benchmarks/mono_capture.py. Usage: BigHeap.exe MODE MIB [PATH].
// Builds a linked list of MIB MiB (a 32-byte node and a 224-byte byte[] per 256 bytes), then
// MODE "capture" times Heapdb.Capture(PATH), MODE "collect" times one full GC.Collect() (under the
// log profiler's heapshot mode, that collection takes a heapshot). Prints the seconds and VmHWM
// (the process's peak resident memory) before and after.
using System;
using System.Diagnostics;
using System.IO;

class Node { public Node Next; public byte[] Payload; }

static class BigHeap
{
    static Node head;

    static long PeakKiB()
    {
        foreach (var line in File.ReadAllLines("/proc/self/status"))
            if (line.StartsWith("VmHWM:"))
                return long.Parse(line.Split(new[] { ' ', '\t' }, StringSplitOptions.RemoveEmptyEntries)[1]);
        return -1;
    }

    static int Main(string[] args)
    {
        long nodes = long.Parse(args[1]) * 1024 * 1024 / 256;
        for (long i = 0; i < nodes; i++)
            head = new Node { Next = head, Payload = new byte[200] };
        long before = PeakKiB();
        var watch = Stopwatch.StartNew();
        long objects = 0;
        if (args[0] == "capture")
            objects = Heapdb.Capture(args[2]);
        else
            GC.Collect();
        watch.Stop();
        Console.WriteLine("{{\"seconds\": {0:F2}, \"peak_before_kib\": {1}, \"peak_after_kib\": {2}, \"objects\": {3}, \"heap_bytes\": {4}}}",
            watch.Elapsed.TotalSeconds, before, PeakKiB(), objects, GC.GetTotalMemory(false));
        return 0;
    }
}
