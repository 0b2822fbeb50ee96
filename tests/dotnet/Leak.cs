// A program with a planted leak, for tests/test_mono.py: run under `mono --profile=heapdb`.
// Usage: Leak.exe OUTDIR N1 N2 N3 F. Phase i adds Ni requests (each subscribed to a static event,
// which keeps it) and Ni cache entries (a static dictionary nothing evicts), makes garbage, and
// captures OUTDIR/capture-i.snapbin. It prints what it holds after each phase, for the test.
// Before that it drops F objects whose finalizer waits until the end: they sit in the finalizer
// queue (one of them in the finalizer thread's hands) through every capture.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace LeakDemo
{
    public class Request
    {
        public readonly int Id;
        public readonly byte[] Body;
        public string Path;

        public Request(int id)
        {
            Id = id;
            Body = new byte[64];
            Path = "/orders/" + id;
        }

        public void OnConfigChanged(object sender, EventArgs e) { Path = Path + "!"; }
    }

    public class CacheEntry
    {
        public string Key;
        public long Stamp;
    }

    public class WeakTarget { public int Value = 7; }
    public class HandleTarget { public int Value = 8; }
    public class Transient { public int Value; }

    public class Finalizable
    {
        public static readonly System.Threading.ManualResetEvent Gate = new System.Threading.ManualResetEvent(false);
        public byte[] Data = new byte[32];
        ~Finalizable() { Gate.WaitOne(); }
    }

    public static class Program
    {
        public static event EventHandler ConfigChanged;
        static readonly Dictionary<string, CacheEntry> Cache = new Dictionary<string, CacheEntry>();
        static GCHandle weak, strong;
        static readonly object Boxed = 4242;                       // a boxed System.Int32
        static readonly Request[] Recent = new Request[3];         // an array of references

        public static int Main(string[] args)
        {
            string dir = args[0];
            int made = 0;
            var alsoHeld = new List<WeakTarget>();
            weak = GCHandle.Alloc(new WeakTarget(), GCHandleType.Weak);  // collected: only weakly held
            var kept = new WeakTarget();
            alsoHeld.Add(kept);
            var weakKept = GCHandle.Alloc(kept, GCHandleType.Weak);      // alive through alsoHeld
            strong = GCHandle.Alloc(new HandleTarget(), GCHandleType.Normal);
            MakeFinalizable(int.Parse(args[4]));
            for (int phase = 1; phase <= 3; phase++) {
                int n = int.Parse(args[phase]);
                for (int i = 0; i < n; i++) {
                    var r = new Request(made);
                    ConfigChanged += r.OnConfigChanged;
                    Cache["key-" + made] = new CacheEntry { Key = "key-" + made, Stamp = made };
                    Recent[made % Recent.Length] = r;
                    made++;
                    var garbage = new Transient { Value = i };
                }
                long objects = Heapdb.Capture(System.IO.Path.Combine(dir, "capture-" + phase + ".snapbin"));
                Console.WriteLine("phase {0} requests {1} cache {2} objects {3} weakalive {4}",
                    phase, made, Cache.Count, objects, weak.Target != null ? 1 : 0);
            }
            GC.KeepAlive(alsoHeld);
            weakKept.Free();
            Finalizable.Gate.Set();
            return 0;
        }

        static void MakeFinalizable(int count)
        {
            for (int i = 0; i < count; i++)
                new Finalizable();
        }
    }
}
