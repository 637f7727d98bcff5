// main() of every lesson-NN executable: the lesson itself is compiled once, as an object library
// whose entry point is FASIM_LESSON_ENTRY (lesson_NN_main), which lesson-answers links as well.
int FASIM_LESSON_ENTRY(int argc, char** argv);

int main(int argc, char** argv) { return FASIM_LESSON_ENTRY(argc, argv); }
