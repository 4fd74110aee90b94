/* SPDX-License-Identifier: BSD-3-Clause */
/* The Computer Language Benchmarks Game: binary-trees, after the C
 * program (Kevin Carson), single-threaded. Allocates and walks perfect
 * binary trees: malloc, free and recursion. Argument: the maximum depth. */
#include <stdio.h>
#include <stdlib.h>

typedef struct tn {
  struct tn *left;
  struct tn *right;
} treeNode;

treeNode *NewTreeNode(treeNode *left, treeNode *right) {
  treeNode *new = malloc(sizeof(treeNode));
  new->left = left;
  new->right = right;
  return new;
}

long ItemCheck(treeNode *tree) {
  if (tree->left == NULL) return 1;
  return 1 + ItemCheck(tree->left) + ItemCheck(tree->right);
}

treeNode *BottomUpTree(unsigned depth) {
  if (depth > 0) return NewTreeNode(BottomUpTree(depth - 1), BottomUpTree(depth - 1));
  return NewTreeNode(NULL, NULL);
}

void DeleteTree(treeNode *tree) {
  if (tree->left != NULL) {
    DeleteTree(tree->left);
    DeleteTree(tree->right);
  }
  free(tree);
}

int main(int argc, char *argv[]) {
  unsigned N = argc > 1 ? (unsigned)atol(argv[1]) : 10;
  unsigned minDepth = 4, maxDepth = minDepth + 2 > N ? minDepth + 2 : N;
  unsigned stretchDepth = maxDepth + 1;
  treeNode *stretchTree = BottomUpTree(stretchDepth);
  printf("stretch tree of depth %u\t check: %li\n", stretchDepth, ItemCheck(stretchTree));
  DeleteTree(stretchTree);
  treeNode *longLivedTree = BottomUpTree(maxDepth);
  for (unsigned depth = minDepth; depth <= maxDepth; depth += 2) {
    long iterations = 1L << (maxDepth - depth + minDepth), check = 0;
    for (long i = 1; i <= iterations; i++) {
      treeNode *tempTree = BottomUpTree(depth);
      check += ItemCheck(tempTree);
      DeleteTree(tempTree);
    }
    printf("%li\t trees of depth %u\t check: %li\n", iterations, depth, check);
  }
  printf("long lived tree of depth %u\t check: %li\n", maxDepth, ItemCheck(longLivedTree));
  DeleteTree(longLivedTree);
  return 0;
}
