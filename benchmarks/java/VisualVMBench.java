import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.Iterator;
import java.util.PriorityQueue;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;

/**
 * VisualVM's heap library (Debian's visualvm package, headless) timed on one dump, for
 * benchmarks/hprof.py: open the heap, walk every instance (count, shallow bytes), then every
 * instance's retained size (the first call computes them all: VisualVM's dominator tree).
 *
 * Usage: java -Xmx16g -cp JAR:. VisualVMBench DUMP [TOP]. Prints one JSON line: the times in
 * seconds, the instance count, the sum of shallow sizes, the TOP (default 5) biggest objects by
 * retained size (id, class, retained) and the JVM's peak heap (sum of the heap pools' peaks).
 * Each step's end also goes to stderr as it happens, so a run killed for time says how far it got.
 */
public class VisualVMBench {
    public static void main(String[] args) throws Exception {
        int top = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        long t0 = System.nanoTime();
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        long t1 = System.nanoTime();
        System.err.println("opened " + (t1 - t0) / 1e9);
        long count = 0;
        long shallow = 0;
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
            Instance instance = it.next();
            count++;
            shallow += instance.getSize();
        }
        long t2 = System.nanoTime();
        System.err.println("walked " + (t2 - t1) / 1e9 + " " + count);
        long retainedSum = 0;
        long first = -1;
        PriorityQueue<long[]> biggest = new PriorityQueue<>((a, b) -> Long.compare(a[1], b[1]));
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
            Instance instance = it.next();
            long retained = instance.getRetainedSize();
            if (first < 0) {
                first = System.nanoTime(); // the first call computed every retained size
                System.err.println("retained sizes computed " + (first - t2) / 1e9);
            }
            retainedSum += retained;
            if (biggest.size() < top || retained > biggest.peek()[1]) {
                biggest.add(new long[] {instance.getInstanceId(), retained});
                if (biggest.size() > top) {
                    biggest.poll();
                }
            }
        }
        long t3 = System.nanoTime();
        StringBuilder tops = new StringBuilder();
        while (!biggest.isEmpty()) {
            long[] b = biggest.poll();
            String cls = heap.getInstanceByID(b[0]).getJavaClass().getName();
            String item = "{\"id\": " + b[0] + ", \"class\": \"" + cls + "\", \"retained\": " + b[1] + "}";
            tops.insert(0, tops.length() == 0 ? item : item + ", ");
        }
        long peakHeap = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                peakHeap += pool.getPeakUsage().getUsed();
            }
        }
        System.out.println(
                "{\"open_s\": " + (t1 - t0) / 1e9
                        + ", \"walk_s\": " + (t2 - t1) / 1e9
                        + ", \"retained_first_s\": " + ((first < 0 ? t3 : first) - t2) / 1e9
                        + ", \"retained_s\": " + (t3 - t2) / 1e9
                        + ", \"instances\": " + count
                        + ", \"shallow_bytes\": " + shallow
                        + ", \"retained_sum\": " + retainedSum
                        + ", \"max_heap\": " + Runtime.getRuntime().maxMemory()
                        + ", \"peak_heap\": " + peakHeap
                        + ", \"top\": [" + tops + "]}");
    }
}
