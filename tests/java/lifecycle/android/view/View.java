package android.view;

/** A stand-in for Android's View: mAttachInfo is null while it is not attached to a window. */
public class View {
    public Object mAttachInfo;
    public int mWindowAttachCount;
    public Object mContext;
    public View mParent;
}
