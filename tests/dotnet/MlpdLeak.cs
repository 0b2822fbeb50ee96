// tests/test_mlpd.py runs this under Mono's log profiler (heapshot=ondemand): it holds requests in a
// static list, takes a heapshot, adds a chain of cache entries, takes another. How many of each it
// makes are its arguments, which the test passes and then counts in the heapshots. Compiled with
// -d:HEAPDB and run under heapdb's module too (--profile=heapdb), it also captures the same heap as
// snap.bin into the directory its third argument names, just before each heapshot.
using System;
using System.Collections.Generic;
using Mono.Profiler.Log;

namespace MlpdLeak {
	public class Request {
		public byte[] Body;
		public Request (int size) { Body = new byte [size]; }
	}

	public class CacheEntry {
		public object Value;
		public CacheEntry Next;
	}

	public static class Registry {
		public static List<Request> Requests = new List<Request> ();
		public static CacheEntry Head;
	}

	public static class Program {
		static string captures;  // with HEAPDB defined and a third argument: heapdb's module captures too
		static int taken;

		// The log profiler walks the heap in the next full collection once asked: this one.
		static void Heapshot ()
		{
#if HEAPDB
			if (captures != null) {
				// The same heap, just before: a full collection first, so that both see only live objects.
				string path = System.IO.Path.Combine (captures, "capture-" + (++taken) + ".snapbin");
				GC.Collect ();
				GC.WaitForPendingFinalizers ();
				Heapdb.Capture (path);
			}
#endif
			LogProfiler.TriggerHeapshot ();
			GC.Collect ();
			GC.WaitForPendingFinalizers ();
		}

		public static int Main (string[] args)
		{
			int requests = int.Parse (args [0]), entries = int.Parse (args [1]);
			captures = args.Length > 2 ? args [2] : null;
			GC.KeepAlive (LogProfiler.HeapshotMode);  // its class ready before the first capture, not between two
			for (int i = 0; i < requests; i++)
				Registry.Requests.Add (new Request (24));
			Heapshot ();
			for (int i = 0; i < entries; i++)
				Registry.Head = new CacheEntry { Value = new int [4], Next = Registry.Head };
			Heapshot ();
			return 0;
		}
	}
}
