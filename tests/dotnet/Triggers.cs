// The profiler module's triggers, for tests/test_mono.py. Usage: Triggers.exe MODE COUNT.
// Holds COUNT Marker objects, then: "call" captures with Heapdb.Capture(null) (to the output
// option); "signal" prints "ready" and waits for a line on stdin (the test signals it meanwhile);
// "every" runs two full collections (every=2 captures after the second), prints "ready" and waits
// for a line, twice: a trigger that comes while a capture is pending joins it, so the test lets
// each capture finish before the next two collections.
using System;

public class Marker { public int Value; }

public static class Triggers
{
    public static int Main(string[] args)
    {
        var markers = new Marker[int.Parse(args[1])];
        for (int i = 0; i < markers.Length; i++)
            markers[i] = new Marker { Value = i };
        if (args[0] == "call") {
            Heapdb.Capture(null);
        } else {
            // The finalizer thread takes these captures: the test says when they are written.
            // (GC.WaitForPendingFinalizers cannot: it returns at once when no finalizer is due.)
            for (int round = 0; round < (args[0] == "every" ? 2 : 1); round++) {
                if (args[0] == "every") {
                    GC.Collect();
                    GC.Collect();
                }
                Console.WriteLine("ready");
                Console.Out.Flush();
                Console.ReadLine();
            }
        }
        GC.KeepAlive(markers);
        return 0;
    }
}
