import android.app.Activity;
import android.app.Application;
import android.app.Fragment;
import android.view.View;
import android.view.inputmethod.InputMethodManager;
import java.util.ArrayList;
import java.util.List;

/**
 * An Android-shaped lifecycle leak, with stand-ins for Android's classes (tests/java/lifecycle/):
 * a static list of listeners holds DESTROYED destroyed activities (each with its destroyed fragment)
 * and LIVE live ones (each with its attached view and its fragment); a static cache holds, after
 * FILLER references to the application, DETACHED views that were attached once and one that never
 * was; a static field holds a detached view whose context is a destroyed activity nothing else holds;
 * the input method manager (a singleton) keeps a detached view, as Android's own is known to.
 *
 * Usage: java LifecycleLeak DESTROYED LIVE DETACHED; prints "ready PID" and waits.
 */
public class LifecycleLeak {
    interface Listener {
        void changed();
    }

    static final List<Listener> LISTENERS = new ArrayList<>();
    static final List<Object> VIEW_CACHE = new ArrayList<>();
    // What the cache holds before its views: they sit past element FILLER, an index larger than
    // the dump's count of names, as in a real heap's large arrays.
    static final int FILLER = 5000;
    static View contextView;
    static final InputMethodManager INPUT_METHOD_MANAGER = new InputMethodManager();

    static class MainActivity extends Activity {
        final byte[] state;
        final Fragment fragment = new Fragment();
        final View content = new View();
        int changes;

        MainActivity(Application app, int size) {
            mApplication = app;
            state = new byte[size];
            fragment.mHost = this;
            fragment.mFragmentManager = new Object();
            content.mContext = this;
        }

        void register() {
            LISTENERS.add(new Listener() {
                public void changed() {
                    changes++;
                }
            });
        }

        void attach() {
            content.mAttachInfo = new Object();
            content.mWindowAttachCount = 1;
        }

        void destroy() {
            mDestroyed = true;
            mFinished = true;
            fragment.mFragmentManager = null;
        }
    }

    // Built by a thread that ends before the dump, so that no frame's local variable holds an
    // object: each is held only the way this program says.
    static void build(int destroyed, int live, int detached) {
        Application app = new Application();
        MainActivity gone = new MainActivity(app, 5000);
        gone.destroy();
        contextView = new View();
        contextView.mContext = gone;
        contextView.mWindowAttachCount = 1;
        View served = new View(); // detached, yet the input method manager keeps it: Android's own leak
        served.mContext = app;
        served.mWindowAttachCount = 1;
        INPUT_METHOD_MANAGER.mNextServedView = served;
        for (int i = 0; i < destroyed + live; i++) {
            MainActivity activity = new MainActivity(app, 1000 + 100 * (i % 20)); // sizes tell the first 20 apart
            activity.register();
            if (i < destroyed) {
                activity.destroy();
            } else {
                activity.attach();
            }
        }
        for (int i = 0; i < FILLER; i++) {
            VIEW_CACHE.add(app);
        }
        for (int i = 0; i < detached + 1; i++) {
            View view = new View();
            view.mContext = app;
            view.mWindowAttachCount = i < detached ? 1 + i : 0; // the last one was never attached
            VIEW_CACHE.add(view);
        }
    }

    public static void main(String[] args) throws Exception {
        int destroyed = Integer.parseInt(args[0]);
        int live = Integer.parseInt(args[1]);
        int detached = Integer.parseInt(args[2]);
        Thread builder = new Thread(() -> build(destroyed, live, detached));
        builder.start();
        builder.join();
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(600_000);
    }
}
