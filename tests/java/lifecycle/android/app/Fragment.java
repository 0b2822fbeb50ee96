package android.app;

/** A stand-in for Android's Fragment: its manager is null once it is destroyed or detached. */
public class Fragment {
    public Object mFragmentManager;
    public Activity mHost;
}
