package android.view.inputmethod;

import android.view.View;

/** A stand-in for Android's InputMethodManager: one per process, keeping the view it serves next. */
public class InputMethodManager {
    public View mNextServedView;
}
