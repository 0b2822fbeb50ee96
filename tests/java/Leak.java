import java.lang.ref.SoftReference;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A leaking program for heapdb's hprof tests: a static cache map keeps every Session it was given,
 * beside weakly and softly held objects. It prints "ready <pid>" once everything is allocated, then
 * sleeps until it is killed. Arguments: the number of sessions (default 500).
 */
public class Leak {
    /** The leak: sessions go in, nothing ever takes them out. */
    static final Map<Integer, Session> CACHE = new HashMap<>();
    /** Holders whose referents nothing else keeps. */
    static final List<WeakReference<Payload>> WEAK = new ArrayList<>();
    static final List<SoftReference<Payload>> SOFT = new ArrayList<>();
    /** A payload held both strongly (here) and weakly (by weakToStrong). */
    static Payload strongPayload;
    static WeakReference<Payload> weakToStrong;

    static final class Session {
        final int id;
        final byte[] buffer;
        final String user;

        Session(int id) {
            this.id = id;
            this.buffer = new byte[1000];
            this.user = "user-" + id;
        }
    }

    static final class Payload {
        final long[] data = new long[16];
    }

    public static void main(String[] args) throws Exception {
        int sessions = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        for (int i = 0; i < sessions; i++) {
            CACHE.put(i, new Session(i));
        }
        List<Payload> keepSoft = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            WEAK.add(new WeakReference<>(new Payload()));
            Payload p = new Payload();
            keepSoft.add(p);
            SOFT.add(new SoftReference<>(p));
        }
        strongPayload = new Payload();
        weakToStrong = new WeakReference<>(strongPayload);
        SOFT_KEEP = keepSoft;
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(600_000);
    }

    /** Keeps the softly referenced payloads strongly reachable too, so a GC cannot clear them. */
    static List<Payload> SOFT_KEEP;
}
