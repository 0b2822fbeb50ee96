import java.util.ArrayList;
import java.util.List;

/**
 * A program wasting memory on duplicate primitive arrays, for heapdb's duplicate-objects
 * inspection: each of 400 requests keeps its own copy of one lookup table (an int[] of 256
 * entries), of one key (a byte[] of 64), of one long[] of timestamps and of one char[] header;
 * it also keeps arrays of equal type and length but other contents (a copy each of 30 tables
 * that differ in one element), an int[] and a float[] of the same bytes (different types: not
 * copies), and arrays held once. It prints "ready <pid> <copies>" once they are allocated, then
 * sleeps until it is killed.
 */
public class DupArrays {
    static final class Request {
        final int[] table;
        final byte[] key;
        final long[] times;
        final char[] header;

        Request(int[] table, byte[] key, long[] times, char[] header) {
            this.table = table;
            this.key = key;
            this.times = times;
            this.header = header;
        }
    }

    static final List<Object> HELD = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        int copies = 400;
        int[] table = new int[256];
        for (int i = 0; i < table.length; i++) {
            table[i] = i * 31 + 7;
        }
        byte[] key = new byte[64];
        for (int i = 0; i < key.length; i++) {
            key[i] = (byte) (i * 13);
        }
        long[] times = {1_700_000_000_000L, 1_700_000_000_500L, 1_700_000_001_000L};
        char[] header = "Content-Type: application/json".toCharArray();
        for (int i = 0; i < copies; i++) {
            HELD.add(new Request(table.clone(), key.clone(), times.clone(), header.clone()));
        }
        for (int i = 0; i < 30; i++) {
            int[] other = table.clone();
            other[i] = -1; // one element differs: same type and length, another content
            HELD.add(other);
        }
        int[] bits = {Float.floatToRawIntBits(1.5f), Float.floatToRawIntBits(2.5f)};
        HELD.add(bits);
        HELD.add(new float[] {1.5f, 2.5f});
        HELD.add(new double[] {3.25, 4.5, 5.75});
        HELD.add(new short[] {1, 2, 3});
        HELD.add(new boolean[] {true, false, true});
        System.out.println("ready " + ProcessHandle.current().pid() + " " + copies);
        System.out.flush();
        Thread.sleep(600_000);
    }
}
