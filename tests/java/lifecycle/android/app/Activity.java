package android.app;

/** A stand-in for Android's Activity: only the fields heapdb's lifecycle rules read. */
public class Activity {
    public boolean mDestroyed;
    public boolean mFinished;
    public Application mApplication;
}
