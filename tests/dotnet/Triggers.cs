// The profiler module's triggers, for tests/test_mono.py. Usage: Triggers.exe MODE COUNT.
// Holds COUNT Marker objects, then: "call" captures with Heapdb.Capture(null) (to the output
// option); "signal" prints "ready" and waits for a line on stdin (the test signals it meanwhile);
// "every" runs four full collections (every=2 captures after the second and the fourth), then
// waits the same way.
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
            if (args[0] == "every")
                for (int round = 0; round < 2; round++) {
                    GC.Collect();
                    GC.Collect();
                    // The capture runs on the finalizer thread; a trigger that comes while one is
                    // pending joins it, so let it run before the next two collections.
                    GC.WaitForPendingFinalizers();
                }
            // The finalizer thread takes these captures: the test says when they are written.
            Console.WriteLine("ready");
            Console.Out.Flush();
            Console.ReadLine();
        }
        GC.KeepAlive(markers);
        return 0;
    }
}
