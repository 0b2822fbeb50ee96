// heapdb's managed API for programs run under `mono --profile=heapdb`: Heapdb.Capture(path).
using System;
using System.Runtime.CompilerServices;

public static class Heapdb
{
    [MethodImpl(MethodImplOptions.InternalCall)]
    static extern long CaptureNative(string path);

    /// <summary>Write the managed heap to path (snap.bin) now; null uses the profiler's output option.
    /// Returns the number of objects written.</summary>
    public static long Capture(string path)
    {
        long objects;
        try {
            objects = CaptureNative(path);
        } catch (MissingMethodException) {
            throw new InvalidOperationException("heapdb's profiler is not loaded: run with mono --profile=heapdb");
        } catch (System.Security.SecurityException) {
            throw new InvalidOperationException("heapdb's profiler is not loaded: run with mono --profile=heapdb");
        }
        if (objects < 0)
            throw new System.IO.IOException("heapdb could not write the capture to " + (path ?? "its output"));
        return objects;
    }
}
